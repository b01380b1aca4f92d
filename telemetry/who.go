package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/celguard/celguard/decisionlog"
)

// Who says who decides where (decisionlog.Who): resource attributes of
// every span, log record and metric, and the "who" of every log record's
// body.
type Who = decisionlog.Who

// WhoAmI is this process's Who, from dir (the repository is the closest
// directory at or above dir holding .git; its remote is origin's URL in
// .git/config, with any user name and password removed): it runs no
// command and reads two small files at most. agentHost and agentVersion
// are the caller's.
func WhoAmI(dir, agentHost, agentVersion string) Who {
	w := Who{AgentHost: agentHost, AgentVersion: agentVersion}
	w.Machine, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		w.User = u.Username
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	for d := dir; d != ""; {
		if fi, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			w.RepoRoot = d
			if fi.IsDir() {
				w.RepoRemote = originURL(filepath.Join(d, ".git", "config"))
			}
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return w
}

// originURL is the url of [remote "origin"] in a git config file, without
// credentials; "" when there is none.
func originURL(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			in = line == `[remote "origin"]`
			continue
		}
		if k, v, ok := strings.Cut(line, "="); in && ok && strings.TrimSpace(k) == "url" {
			return StripCredentials(strings.TrimSpace(v))
		}
	}
	return ""
}

// StripCredentials removes the user information (user:token@) from a
// remote's URL, which may carry an access token; a URL that does not
// parse is dropped whole unless it is scp-like (git@host:path).
func StripCredentials(remote string) string {
	if !strings.Contains(remote, "://") {
		if at := strings.LastIndex(remote, "@"); at >= 0 && strings.Contains(remote[at:], ":") {
			return remote[at+1:]
		}
		return remote
	}
	u, err := url.Parse(remote)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// resource is the resource of everything t exports: the service (celguard,
// or OTEL_SERVICE_NAME, or Config.ServiceName), the OTEL_RESOURCE_ATTRIBUTES,
// and Config.Who.
func (t *Telemetry) resource(ctx context.Context) (*resource.Resource, error) {
	w := t.cfg.Who
	attrs := []attribute.KeyValue{attribute.String("service.name", "celguard"), attribute.String("os.type", runtime.GOOS)}
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	add("host.name", w.Machine)
	add("user.name", w.User)
	add("vcs.repository.url.full", w.RepoRemote)
	add("celguard.repository.root", w.RepoRoot)
	add("celguard.agent.host", w.AgentHost)
	add("celguard.agent.version", w.AgentVersion)
	opts := []resource.Option{resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK()}
	if t.cfg.ServiceName != "" {
		opts = append(opts, resource.WithAttributes(attribute.String("service.name", t.cfg.ServiceName)))
	}
	r, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return r, nil
}

// whoKey is the context key of WithWho.
type whoKey struct{}

// WithWho is ctx saying who decides where for the decisions made in it,
// for a process that decides for several repositories and agent hosts (the
// hook's decision daemon: each hook's working directory, host and
// version). A decision made in it carries w's repository and agent host
// and version as attributes of its span and log record (beside the
// resource, which says the process's own: set Config.Who to the machine
// and user alone), in its record's who (with Config.Who's machine and user
// where w has none), and in its metrics' host.
func WithWho(ctx context.Context, w Who) context.Context {
	return context.WithValue(ctx, whoKey{}, w)
}

// whoOf is Config.Who, or the WithWho of ctx over it; perCall says ctx
// had one.
func (t *Telemetry) whoOf(ctx context.Context) (w Who, perCall bool) {
	w = t.cfg.Who
	c, ok := ctx.Value(whoKey{}).(Who)
	if !ok {
		return w, false
	}
	if c.Machine == "" {
		c.Machine = w.Machine
	}
	if c.User == "" {
		c.User = w.User
	}
	return c, true
}

// whoAttributes are the per-decision attributes of a WithWho: the
// repository and the agent host, under the resource's names.
func whoAttributes(w Who) []attribute.KeyValue {
	var a []attribute.KeyValue
	add := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	add("vcs.repository.url.full", w.RepoRemote)
	add("celguard.repository.root", w.RepoRoot)
	add("celguard.agent.host", w.AgentHost)
	add("celguard.agent.version", w.AgentVersion)
	return a
}
