package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/serve/client"
)

// defaultServerTimeout bounds a forwarded hook's wait for the server: well
// under the hosts' hook timeouts, and long enough for a store round trip.
const defaultServerTimeout = 2 * time.Second

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

// ask posts the event to the server (serve/client) and reads its command
// answer.
func (o forwardOptions) ask(ctx context.Context, host string, input []byte) (hooks.Response, error) {
	token := ""
	if o.tokenFile != "" {
		var err error
		if token, err = readToken(o.tokenFile); err != nil {
			return hooks.Response{}, err
		}
	}
	c, err := client.New(o.server, token)
	if err != nil {
		return hooks.Response{}, err
	}
	a, err := c.Hook(ctx, host, input)
	if err != nil {
		return hooks.Response{}, err
	}
	return hooks.Response{Stdout: []byte(a.Stdout), Stderr: a.Stderr, Exit: a.Exit}, nil
}
