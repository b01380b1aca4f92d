package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/celguard/celguard/serve"
)

// builtBinary is the celguard binary built once for the tests that run it
// as a separate process.
var builtBinary = struct {
	once sync.Once
	path string
	err  error
}{}

// buildEnv is the environment the test binary started with: go build runs
// in it, not in a test's (a fixture that set HOME to a temporary directory
// would otherwise make go build start from an empty build and module
// cache).
var buildEnv = os.Environ()

// celguardBinary builds the command (go build) into a temporary directory
// that outlives the test, once per test binary.
func celguardBinary(t *testing.T) string {
	t.Helper()
	builtBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "celguard-bin-")
		if err != nil {
			builtBinary.err = err
			return
		}
		builtBinary.path = filepath.Join(dir, "celguard")
		cmd := exec.Command("go", "build", "-o", builtBinary.path, ".")
		cmd.Env = buildEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			builtBinary.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if builtBinary.err != nil {
		t.Fatal(builtBinary.err)
	}
	return builtBinary.path
}

// servedProcess is a `celguard serve` process.
type servedProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
	done   chan error
}

// startServe runs `celguard serve args...` in an empty home and working
// directory (no user or project policies), waits for it to listen and
// returns its address from its log.
func startServe(t *testing.T, args ...string) *servedProcess {
	t.Helper()
	bin := celguardBinary(t)
	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".state"))
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &servedProcess{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	addr := regexp.MustCompile(`address=((?:https?://|unix:)\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.stderr.WriteString(line + "\n")
			if m := addr.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("celguard serve exited before listening:\n%s", p.stderr)
		}
		p.url = u
	case <-time.After(60 * time.Second):
		t.Fatalf("celguard serve did not listen within a minute:\n%s", p.stderr)
	}
	return p
}

// stop ends the server with SIGTERM and checks that it exits cleanly.
func (p *servedProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.done; err != nil {
		t.Fatalf("celguard serve after SIGTERM: %v", err)
	}
	p.done <- nil // for the cleanup
}

const rmRootEvent = `{"hook_event_name":"PreToolUse","session_id":"e2e","cwd":"/srv/app","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"toolu_1"}`
const lsEvent = `{"hook_event_name":"PreToolUse","session_id":"e2e","cwd":"/srv/app","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_2"}`

// TestServeEndToEnd runs the real binary: `celguard serve` with no flag
// but --listen denies Claude Code's PreToolUse for rm -rf /, the forwarding
// command hook gets the same answer, and once the server is stopped the
// forwarding hook fails closed.
func TestServeEndToEnd(t *testing.T) {
	srv := startServe(t, "--listen", "127.0.0.1:0")

	res, err := http.Post(srv.url+"/v1/hooks/claude-code", "application/json", strings.NewReader(rmRootEvent))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var out struct {
		HookSpecificOutput struct {
			PermissionDecision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("POST /v1/hooks/claude-code rm -rf /: %d %s, want 200 and a deny", res.StatusCode, body)
	}

	bin := celguardBinary(t)
	hook := func(event string, args ...string) (stdout, stderr string, exit int) {
		cmd := exec.Command(bin, append([]string{"hook", "claude-code"}, args...)...)
		cmd.Stdin = strings.NewReader(event)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CELGUARD_DAEMON=off")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return o.String(), e.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), 0
	}
	stdout, stderr, exit := hook(rmRootEvent, "--server", srv.url)
	if exit != 0 || strings.TrimSpace(stdout) != strings.TrimSpace(string(body)) {
		t.Fatalf("forwarded hook: exit %d, stdout %q, stderr %q; want exit 0 and the server's answer %s", exit, stdout, stderr, body)
	}
	if stdout, _, exit := hook(lsEvent, "--server", srv.url); exit != 0 || strings.Contains(stdout, "deny") {
		t.Fatalf("forwarded hook for ls: exit %d, %s", exit, stdout)
	}

	srv.stop(t)
	stdout, stderr, exit = hook(lsEvent, "--server", srv.url)
	if exit != 2 || !strings.Contains(stderr, "did not answer") || stdout != "" {
		t.Fatalf("forwarded hook with the server stopped: exit %d, stdout %q, stderr %q; want exit 2 and a reason", exit, stdout, stderr)
	}
	// --fail-open is the user's choice: the call goes on (exit 1, a non-blocking error).
	if _, _, exit := hook(lsEvent, "--server", srv.url, "--fail-open"); exit != 1 {
		t.Fatalf("forwarded hook with --fail-open and the server stopped: exit %d, want 1", exit)
	}
}

// TestServeReloadOnSIGHUP changes a --policy file, sends SIGHUP (polling
// off) and sees the new set in force and in /v1/status.
func TestServeReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.yaml")
	write := func(reason string) {
		data := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: no-deploy\n    match: {tools: [Deploy]}\n    verdict: block\n    reason: " + reason + "\n"
		if err := os.WriteFile(pol, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	logFile := filepath.Join(dir, "decisions.jsonl")
	srv := startServe(t, "--listen", "127.0.0.1:0", "--policy", pol, "--reload-interval", "0", "--decision-log", logFile)
	decide := func() map[string]any {
		res, err := http.Post(srv.url+"/v1/sessions/s/before", "application/json", strings.NewReader(`{"tool":"Deploy"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := decide(); m["reason"] != "first" {
		t.Fatalf("before the reload: %v", m)
	}
	write("second")
	if err := srv.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for range 600 {
		if m := decide(); m["reason"] == "second" {
			res, err := http.Get(srv.url + "/v1/status")
			if err != nil {
				t.Fatal(err)
			}
			var st map[string]any
			_ = json.NewDecoder(res.Body).Decode(&st)
			res.Body.Close()
			if st["ready"] != true || st["policy_digest"] != m["policy_digest"] {
				t.Fatalf("status after SIGHUP: %v (decision %v)", st, m)
			}
			srv.stop(t)
			// Every decision is in the log, the last one this one.
			data, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) < 2 || !strings.Contains(lines[len(lines)-1], m["decision_id"].(string)) {
				t.Fatalf("decision log:\n%s\nwant every decision, the last %v", data, m["decision_id"])
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("SIGHUP did not reload:\n%s", srv.stderr)
}

// TestForwardFailsClosed runs the forwarding hook in-process against
// servers that misbehave: each answer is Claude Code's block (exit 2).
func TestForwardFailsClosed(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"garbage", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>hello</html>") }, "not a hook answer"},
		{"missing fields", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"stdout":""}`) }, "not a hook answer"},
		{"bad exit", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"stdout":"","stderr":"","exit":7}`)
		}, "not a hook answer"},
		{"stdout not JSON", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"stdout":"allow","stderr":"","exit":0}`)
		}, "not a hook answer"},
		{"HTTP 500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, "HTTP 500"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, "redirected"},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, "did not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(c.handler)
			defer ts.Close()
			var stdout, stderr bytes.Buffer
			code := run([]string{"hook", "claude-code", "--server", ts.URL, "--server-timeout", "200ms"}, strings.NewReader(lsEvent), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 with %q", code, stdout.String(), stderr.String(), c.want)
			}
		})
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths and the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "celguard test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// TestServeTLSAndToken serves HTTPS with a token: requests need the
// token, and a forwarding hook that does not trust the certificate fails
// closed.
func TestServeTLSAndToken(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile, "--token-file", tokenFile)
	if !strings.HasPrefix(srv.url, "https://") {
		t.Fatalf("address %s, want https", srv.url)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	post := func(token string) int {
		req, _ := http.NewRequest("POST", srv.url+"/v1/sessions/s/before", strings.NewReader(`{"tool":"Bash","args":{"command":"ls"}}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(""); code != 401 {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code := post("t0ken"); code != 200 {
		t.Errorf("with the token: %d, want 200", code)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"hook", "claude-code", "--server", srv.url, "--token-file", tokenFile}, strings.NewReader(lsEvent), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "certificate") {
		t.Errorf("forwarding to an untrusted certificate: exit %d, stderr %q; want exit 2", code, stderr.String())
	}
	srv.stop(t)
}

// TestServeUnixSocket serves on a unix socket, mode 0600, and the
// forwarding hook reaches it by unix:PATH.
func TestServeUnixSocket(t *testing.T) {
	// A short path: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "cg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	srv := startServe(t, "--unix", sock)
	if srv.url != "unix:"+sock {
		t.Fatalf("address %s, want unix:%s", srv.url, sock)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"hook", "claude-code", "--server", "unix:" + sock}, strings.NewReader(rmRootEvent), &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), `"deny"`) {
		t.Fatalf("forwarded over the socket: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	srv.stop(t)
}

// TestServeOperatorToken: --approver-token-file opens the approval routes
// to that token only; the decision token does not open them.
func TestServeOperatorToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile, approverFile := filepath.Join(dir, "token"), filepath.Join(dir, "approver")
	if err := os.WriteFile(tokenFile, []byte("decide-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(approverFile, []byte("approve-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--approver-token-file", approverFile)
	for _, tc := range []struct {
		token  string
		status int
	}{{"", 401}, {"decide-1", 403}, {"approve-1", 200}} {
		req, _ := http.NewRequest("GET", srv.url+"/v1/sessions/s/approvals", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("token %q: %d, want %d", tc.token, res.StatusCode, tc.status)
		}
	}
	// The token files are protected places: the built-in self-protection
	// policy blocks a tool call that reads one.
	for _, call := range []string{
		`{"tool": "Read", "args": {"file_path": ` + strconv.Quote(approverFile) + `}, "cwd": "/srv/app"}`,
		`{"tool": "Bash", "args": {"command": ` + strconv.Quote("cat "+tokenFile) + `}, "cwd": "/srv/app"}`,
	} {
		req, _ := http.NewRequest("POST", srv.url+"/v1/sessions/s/before", strings.NewReader(call))
		req.Header.Set("Authorization", "Bearer decide-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var d struct{ Verdict, Code, RuleID string }
		err = json.NewDecoder(res.Body).Decode(&d)
		res.Body.Close()
		if err != nil || d.Verdict != "block" || d.Code != "self_protection" {
			t.Errorf("%s: %+v %v, want a self_protection block", call, d, err)
		}
	}
}

// TestServeOperatorRoutesRefuseTheAgentToken is issue 24's trust boundary,
// through the real binary: the agents' token gets 403 forbidden on every
// operator route of serve's route table (halt, lift, session delete,
// reload, the approvals, the metrics), and the operator token opens them.
func TestServeOperatorRoutesRefuseTheAgentToken(t *testing.T) {
	dir := t.TempDir()
	agentFile, operatorFile := filepath.Join(dir, "agent-token"), filepath.Join(dir, "operator-token")
	if err := os.WriteFile(agentFile, []byte("agent-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(operatorFile, []byte("operator-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--listen", "127.0.0.1:0", "--token-file", agentFile, "--operator-token-file", operatorFile,
		"--store", "memory:", "--bundle", "none", "--user-dir", "-", "--project-dir", "-")
	send := func(method, path, token string) (int, string) {
		t.Helper()
		var body io.Reader
		if method != "GET" {
			body = strings.NewReader(`{}`)
		}
		req, _ := http.NewRequest(method, srv.url+path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		return res.StatusCode, e.Error.Code
	}
	n := 0
	for _, rt := range serve.Routes() {
		if rt.Principal != serve.Operator || rt.Console {
			continue // the console's routes take a console session, not a bearer token: serve/console_test.go
		}
		n++
		path := strings.NewReplacer("{id}", "s1", "{approval}", "00000000").Replace(rt.Path)
		if status, code := send(rt.Method, path, "agent-1"); status != 403 || code != serve.CodeForbidden {
			t.Errorf("%s %s with the agents' token: %d %s, want 403 forbidden", rt.Method, path, status, code)
		}
		if status, code := send(rt.Method, path, "operator-1"); status == 401 || status == 403 && code != serve.CodeAlwaysRefused {
			t.Errorf("%s %s with the operator token: %d %s", rt.Method, path, status, code)
		}
	}
	for _, want := range []string{"POST /v1/halt", "DELETE /v1/halt", "DELETE /v1/sessions/{id}", "GET /v1/sessions/{id}/approvals", "POST /v1/reload", "GET /metrics"} {
		found := false
		for _, rt := range serve.Routes() {
			found = found || rt.Method+" "+rt.Path == want && rt.Principal == serve.Operator
		}
		if !found {
			t.Errorf("%s is not an operator route", want)
		}
	}
	if n < 8 {
		t.Fatalf("%d operator routes, want at least 8", n)
	}
	// The agents' token still decides.
	if status, _ := send("POST", "/v1/sessions", "agent-1"); status != 400 && status != 200 {
		t.Errorf("the agents' token on POST /v1/sessions: %d", status)
	}
	srv.stop(t)
}
