package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/serve"
)

// defaultServerTimeout bounds a forwarded hook's wait for the server: well
// under the hosts' hook timeouts, and long enough for a store round trip.
const defaultServerTimeout = 2 * time.Second

// maxServerAnswer bounds the answer read from a server.
const maxServerAnswer = 4 << 20

// forwardOptions are the flags of `celguard hook HOST --server URL`, which
// forwards the event to `celguard serve` instead of deciding it here.
type forwardOptions struct {
	server    string
	tokenFile string
	timeout   time.Duration
}

func (o *forwardOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.server, "server", "", "forward the event to this celguard serve (http://HOST:PORT, https://..., or unix:/path/to.sock) instead of deciding it here; fails closed when it does not answer")
	f.StringVar(&o.tokenFile, "token-file", "", "with --server: a file whose content is the server's bearer token")
	f.DurationVar(&o.timeout, "server-timeout", defaultServerTimeout, "with --server: give up (and fail) after this long waiting for the server")
}

// args are the flags that give o, for hook install.
func (o forwardOptions) args() []string {
	if o.server == "" {
		return nil
	}
	out := []string{"--server", o.server}
	if o.tokenFile != "" {
		out = append(out, "--token-file", o.tokenFile)
	}
	if o.timeout != defaultServerTimeout && o.timeout > 0 {
		out = append(out, "--server-timeout", o.timeout.String())
	}
	return out
}

// run forwards one event to the server and returns its answer. Nothing is
// compiled here. The server down, slow (--server-timeout), answering
// anything but HTTP 200 with a well-formed command answer, or a token file
// that cannot be read: each is the host's failure answer, closed unless
// failOpen (and at turn end, as for every hook, not blocking).
func (o forwardOptions) run(ctx context.Context, host hooks.Host, input []byte, failOpen bool) hooks.Response {
	if ctx == nil {
		ctx = context.Background()
	}
	timeout := o.timeout
	if timeout <= 0 {
		timeout = defaultServerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, resp := hooks.Respond(ctx, host, input, failOpen, func(ctx context.Context, _ hooks.Event) (hooks.Response, error) {
		return o.ask(ctx, host.Name(), input)
	})
	return resp
}

// ask posts the event to the server and reads its command answer.
func (o forwardOptions) ask(ctx context.Context, host string, input []byte) (hooks.Response, error) {
	client, endpoint, err := forwardClient(o.server)
	if err != nil {
		return hooks.Response{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/hooks/"+host+"?form="+serve.FormCommand, bytes.NewReader(input))
	if err != nil {
		return hooks.Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if o.tokenFile != "" {
		token, err := readToken(o.tokenFile)
		if err != nil {
			return hooks.Response{}, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return hooks.Response{}, fmt.Errorf("the server %s did not answer: %w", o.server, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxServerAnswer+1))
	if err != nil {
		return hooks.Response{}, fmt.Errorf("the server %s: %w", o.server, err)
	}
	if res.StatusCode != http.StatusOK {
		return hooks.Response{}, fmt.Errorf("the server %s answered HTTP %d: %s", o.server, res.StatusCode, firstLine(body))
	}
	a, err := commandAnswer(body)
	if err != nil {
		return hooks.Response{}, fmt.Errorf("the server %s answered something that is not a hook answer: %w", o.server, err)
	}
	return hooks.Response{Stdout: []byte(a.Stdout), Stderr: a.Stderr, Exit: a.Exit}, nil
}

// commandAnswer decodes a server's command answer strictly: the three
// fields, an exit code a hook may have (0, 1 or 2), and stdout empty or one
// JSON value.
func commandAnswer(body []byte) (serve.CommandAnswer, error) {
	if len(body) > maxServerAnswer {
		return serve.CommandAnswer{}, fmt.Errorf("larger than %d bytes", maxServerAnswer)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return serve.CommandAnswer{}, err
	}
	for _, k := range []string{"stdout", "stderr", "exit"} {
		if _, ok := raw[k]; !ok {
			return serve.CommandAnswer{}, fmt.Errorf("no %q", k)
		}
	}
	var a serve.CommandAnswer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return serve.CommandAnswer{}, err
	}
	if a.Exit < 0 || a.Exit > 2 {
		return serve.CommandAnswer{}, fmt.Errorf("exit code %d", a.Exit)
	}
	if s := strings.TrimSpace(a.Stdout); s != "" && !json.Valid([]byte(s)) {
		return serve.CommandAnswer{}, errors.New("stdout is not JSON")
	}
	return a, nil
}

// forwardClient is the HTTP client and base URL of a --server address:
// http(s)://HOST:PORT, or unix:PATH for a unix socket.
func forwardClient(server string) (*http.Client, string, error) {
	if path, ok := strings.CutPrefix(server, "unix:"); ok {
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return nil, "", errors.New("--server unix: needs a socket path, e.g. unix:/run/celguard.sock")
		}
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		return &http.Client{Transport: tr}, "http://celguard", nil
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("--server %q: want http://HOST:PORT, https://HOST:PORT or unix:/path/to.sock", server)
	}
	// No proxy: the hook talks to the server it was given, not to
	// whatever HTTP_PROXY the agent's environment names.
	tr := &http.Transport{Proxy: nil}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("the server redirected the hook")
	}}, strings.TrimSuffix(u.String(), "/"), nil
}

// firstLine is the first line of b, at most 200 bytes.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
