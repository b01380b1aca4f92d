//go:build unix

package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/store/statedir"
)

// daemonSocket runs a daemon's server (Config.Daemon) on a unix socket
// until the test ends, deciding with decide, stale once stale is set; it
// returns the socket, the key and a channel Run's result arrives on.
func daemonSocket(t *testing.T, decide func(ctx context.Context, host hooks.Host, event []byte, workDir, want string) (hooks.Response, string, string), stale func() error) (string, *statedir.Key, chan error) {
	return daemonSocketTimeout(t, decide, stale, 5*time.Second)
}

// daemonSocketTimeout is daemonSocket with the server's decision deadline.
func daemonSocketTimeout(t *testing.T, decide func(ctx context.Context, host hooks.Host, event []byte, workDir, want string) (hooks.Response, string, string), stale func() error, timeout time.Duration) (string, *statedir.Key, chan error) {
	dir, err := os.MkdirTemp("", "sv") // short: a unix socket's path is bounded
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	key, err := statedir.LoadKey(dir)
	require.NoError(t, err)
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	cfg := serve.Config{
		Engine: celguard.Config{Sources: func() ([]policy.Source, error) {
			return []policy.Source{policies.ToolClasses(), source("test.yaml", testPolicy)}, nil
		}},
		Version: "test-daemon",
		Timeout: timeout,
		Daemon:  &serve.Daemon{Key: key, Decide: decide, Stale: stale},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx, []net.Listener{ln}, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the daemon's server did not stop")
		}
	})
	return sock, key, done
}

// call asks the daemon on sock over the hook clients' wire.
func call(t *testing.T, sock string, p daemonwire.HookParams) (daemonwire.HookResult, error) {
	t.Helper()
	if p.Nonce == "" {
		var err error
		p.Nonce, err = daemonwire.NewNonce()
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return daemonwire.Call(ctx, sock, p)
}

// TestDaemonSocketServesBothWires: the daemon's one socket answers the
// hook clients' JSON-RPC wire and HTTP (the status for doctor, the hook
// route), with the same decision and the same MAC; a connection that
// sends nothing holds up no other.
func TestDaemonSocketServesBothWires(t *testing.T) {
	var mu sync.Mutex
	var got []string
	decide := func(_ context.Context, host hooks.Host, event []byte, workDir, want string) (hooks.Response, string, string) {
		mu.Lock()
		got = append(got, host.Name()+"|"+string(event)+"|"+workDir+"|"+want)
		mu.Unlock()
		return hooks.Response{Stdout: []byte(`{"decision":"block"}`), Stderr: "why", Exit: 0}, "sha256:set", ""
	}
	sock, key, _ := daemonSocket(t, decide, nil)

	// A client that connects and sends nothing.
	idle, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer idle.Close()

	nonce, _ := daemonwire.NewNonce()
	p := daemonwire.HookParams{Nonce: nonce, Host: "codex", WorkDir: "/w", Digest: "sha256:want", Event: []byte(`{"a": 1}`)}
	res, err := call(t, sock, p)
	require.NoError(t, err)
	require.True(t, daemonwire.Verify(key, res.MAC, res.Answer(p)), "the answer is signed")
	assert.Equal(t, "sha256:set", res.Digest)
	assert.Equal(t, "test-daemon", res.Version)
	assert.Equal(t, "", res.Manifest)
	a, err := daemonwire.ParseAnswer(res.Body)
	require.NoError(t, err)
	assert.Equal(t, daemonwire.CommandAnswer{Stdout: `{"decision":"block"}`, Stderr: "why"}, a)

	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	// The same event over HTTP: the same decision, signed the same way.
	nonce2, _ := daemonwire.NewNonce()
	req, err := http.NewRequest(http.MethodPost, "http://celguard-daemon/v1/hooks/codex?form=command", strings.NewReader(`{"a": 1}`))
	require.NoError(t, err)
	req.Header.Set(daemonwire.HeaderNonce, nonce2)
	req.Header.Set(daemonwire.HeaderWorkDir, "/w")
	req.Header.Set(daemonwire.HeaderDigest, "sha256:want")
	hres, err := hc.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(hres.Body)
	hres.Body.Close()
	require.Equal(t, http.StatusOK, hres.StatusCode, string(body))
	p2 := p
	p2.Nonce = nonce2
	viaHTTP := daemonwire.HookResult{Digest: hres.Header.Get(daemonwire.HeaderDigest), Version: hres.Header.Get(daemonwire.HeaderVersion),
		Manifest: hres.Header.Get(daemonwire.HeaderManifest), MAC: hres.Header.Get(daemonwire.HeaderMAC), Body: body}
	assert.True(t, daemonwire.Verify(key, viaHTTP.MAC, viaHTTP.Answer(p2)))
	assert.Equal(t, res.Body, viaHTTP.Body)

	sres, err := hc.Get("http://celguard-daemon/v1/status")
	require.NoError(t, err)
	var st serve.AgentStatus
	require.NoError(t, json.NewDecoder(sres.Body).Decode(&st))
	sres.Body.Close()
	assert.EqualValues(t, 2, st.DaemonAnswers)
	mu.Lock()
	assert.Equal(t, []string{"codex|{\"a\": 1}|/w|sha256:want", "codex|{\"a\": 1}|/w|sha256:want"}, got)
	mu.Unlock()
}

// TestDaemonSocketRefuses: a request the daemon cannot take is answered
// with an error, unsigned, and decided by no one: another method, an
// unknown host, an event over the bound, a line over the bound; a stale
// daemon refuses and stops.
func TestDaemonSocketRefuses(t *testing.T) {
	decided := 0
	var mu sync.Mutex
	decide := func(context.Context, hooks.Host, []byte, string, string) (hooks.Response, string, string) {
		mu.Lock()
		decided++
		mu.Unlock()
		return hooks.Response{}, "", ""
	}
	var stale atomic.Bool
	sock, _, done := daemonSocket(t, decide, func() error {
		if stale.Load() {
			return errors.New("the binary changed")
		}
		return nil
	})

	_, err := call(t, sock, daemonwire.HookParams{Host: "no-such-host", Event: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not_found")
	_, err = call(t, sock, daemonwire.HookParams{Host: "codex", Event: make([]byte, serve.DefaultMaxBodyBytes+1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_input")

	raw := func(line string) string {
		c, err := net.Dial("unix", sock)
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		go func() { _, _ = io.WriteString(c, line) }()
		out, err := daemonwire.ReadLine(c, 1<<20)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(out)
	}
	nonce, _ := daemonwire.NewNonce()
	assert.Contains(t, raw(`{"jsonrpc":"2.0","id":"`+nonce+`","method":"tools/call","params":{"nonce":"`+nonce+`"}}`+"\n"), `"code":-32602`)
	assert.Contains(t, raw(`{"jsonrpc":"2.0","id":"`+nonce+`","method":"celguard/hook","params":{"nonce":"`+nonce+`","allow":true}}`+"\n"), `"error"`)
	assert.Contains(t, raw("{"+strings.Repeat(" ", int(daemonwire.MaxRequestLine(serve.DefaultMaxBodyBytes)))+"\n"), `"code":-32600`)
	mu.Lock()
	assert.Equal(t, 0, decided)
	mu.Unlock()

	stale.Store(true)
	_, err = call(t, sock, daemonwire.HookParams{Host: "codex", Event: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "daemon_stale")
	select {
	case err := <-done:
		require.NoError(t, err)
		done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("a stale daemon did not stop")
	}
}

// TestDaemonSocketDeadline: a decision that ignores its context (a judge,
// an approver or a store that never returns) is answered at the server's
// deadline with its error, unsigned, on both wires, and the daemon goes
// on answering other calls meanwhile; the late decision's answer, when it
// comes, is dropped.
func TestDaemonSocketDeadline(t *testing.T) {
	release := make(chan struct{})
	var late atomic.Int32
	decide := func(_ context.Context, _ hooks.Host, event []byte, _, _ string) (hooks.Response, string, string) {
		if string(event) == `{"hang":true}` {
			<-release // ignores its context
			late.Add(1)
		}
		return hooks.Response{Stdout: []byte("ok")}, "sha256:d", ""
	}
	sock, key, _ := daemonSocketTimeout(t, decide, nil, 300*time.Millisecond)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's cleanup (last in, first out)

	// Two hung calls at once, on the JSON-RPC wire.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = call(t, sock, daemonwire.HookParams{Host: "codex", Event: []byte(`{"hang":true}`)})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "deadline_exceeded")
	}
	// Meanwhile the daemon answers, signed.
	nonce, err := daemonwire.NewNonce()
	require.NoError(t, err)
	p := daemonwire.HookParams{Nonce: nonce, Host: "codex", Event: []byte(`{}`)}
	res, err := call(t, sock, p)
	require.NoError(t, err)
	assert.True(t, daemonwire.Verify(key, res.MAC, res.Answer(p)))
	assert.Equal(t, "sha256:d", res.Digest)

	// The HTTP route too.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req, err := http.NewRequest(http.MethodPost, "http://d/v1/hooks/codex", strings.NewReader(`{"hang":true}`))
	require.NoError(t, err)
	req.Header.Set(daemonwire.HeaderNonce, nonce)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(body), "deadline_exceeded")
	assert.Empty(t, resp.Header.Get(daemonwire.HeaderMAC))

	assert.EqualValues(t, 0, late.Load(), "a hung decision returned before it was released")
	free()
	assert.Eventually(t, func() bool { return late.Load() == 3 }, 20*time.Second, 10*time.Millisecond)
	// And still answers after the late decisions dropped their answers.
	_, err = call(t, sock, daemonwire.HookParams{Host: "codex", Event: []byte(`{}`)})
	require.NoError(t, err)
}
