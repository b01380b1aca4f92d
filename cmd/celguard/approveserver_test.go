package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
)

const serveAsk = `apiVersion: celguard.dev/v1
kind: Policy
name: asks
rules:
  - id: confirm-push
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("git push")'
    verdict: ask
    reason: pushing needs a person
`

// TestApproveServer: a Codex hook ask answered by celguard serve names
// `celguard approve --server URL --session-id ID ...`; that command, run
// from a terminal, records the approval in the server's session, and the
// identical call then runs. A wrong token is refused as unauthorized.
func TestApproveServer(t *testing.T) {
	for _, m := range agentMarkers {
		t.Setenv(m.name, "")
	}
	oldTerm, oldAnc := stdinIsTerminal, agentAncestor
	stdinIsTerminal = func(io.Reader) bool { return true }
	agentAncestor = func() (string, int, bool) { return "", 0, false }
	t.Cleanup(func() { stdinIsTerminal, agentAncestor = oldTerm, oldAnc })

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "approver-token")
	if err := os.WriteFile(tokenFile, []byte("approver-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	url := "http://" + ts.Listener.Addr().String()
	srv, err := serve.New(serve.Config{
		Engine: celguard.Config{Sources: func() ([]policy.Source, error) {
			return []policy.Source{policies.ToolClasses(), {Name: "asks.yaml", Data: []byte(serveAsk)}}, nil
		}},
		OperatorToken: "approver-secret",
		HookOptions:   hooks.Options{ApproveCommandFor: serveApproveCommand(url, tokenFile)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv.Handler()
	ts.Start()
	defer ts.Close()

	push := func() (decision, reason string) {
		t.Helper()
		return codexPush(t, ts.URL)
	}
	decision, reason := push()
	want := "celguard approve --server " + url + " --session-id codex-1 --approver-token-file " + tokenFile
	if decision != "deny" || !strings.Contains(reason, want) || strings.Contains(reason, "--always") {
		t.Fatalf("the ask's refusal: %s %q, want a deny naming %q and no --always", decision, reason, want)
	}
	id := regexp.MustCompile(`approval request ([0-9a-f]{8})`).FindStringSubmatch(reason)[1]
	approve := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"approve", id, "--server", url, "--session-id", "codex-1"}, args...), strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}

	// approvals list --server finds the request and its session: the
	// person approving need not know the session id.
	var listed bytes.Buffer
	if code := run([]string{"approvals", "list", "--server", url, "--approver-token-file", tokenFile}, strings.NewReader(""), &listed, io.Discard); code != exitOK ||
		!regexp.MustCompile(id+`\s+codex-1\s+`).MatchString(listed.String()) {
		t.Fatalf("approvals list --server: exit %d\n%s", code, listed.String())
	}
	listed.Reset()
	if code := run([]string{"approvals", "list", "--server", url, "--approver-token-file", tokenFile, "--format", "json"}, strings.NewReader(""), &listed, io.Discard); code != exitOK ||
		!strings.Contains(listed.String(), `"session_id": "codex-1"`) || !strings.Contains(listed.String(), `"id": "`+id+`"`) {
		t.Fatalf("approvals list --server --format json: exit %d\n%s", code, listed.String())
	}

	// A wrong token: unauthorized, nothing recorded.
	bad := filepath.Join(dir, "bad-token")
	if err := os.WriteFile(bad, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := approve("y\n", "--approver-token-file", bad); code != exitUsage || !strings.Contains(stderr, "unauthorized") {
		t.Fatalf("wrong token: exit %d, %q, want exit %d naming unauthorized", code, stderr, exitUsage)
	}
	// --always is the server's refusal.
	if code, _, stderr := approve("y\n", "--approver-token-file", tokenFile, "--always"); code != exitUsage || !strings.Contains(stderr, "always_refused") {
		t.Fatalf("--always: exit %d, %q, want always_refused", code, stderr)
	}
	// No terminal: refused before anything is read or sent.
	stdinIsTerminal = func(io.Reader) bool { return false }
	if code, _, stderr := approve("y\n", "--approver-token-file", tokenFile); code != exitUsage || !strings.Contains(stderr, "not a terminal") {
		t.Fatalf("no terminal: exit %d, %q", code, stderr)
	}
	stdinIsTerminal = func(io.Reader) bool { return true }
	// Answering no records nothing.
	if code, _, _ := approve("n\n", "--approver-token-file", tokenFile); code != exitFindings {
		t.Fatalf("answered no: exit %d", code)
	}
	if d, _ := push(); d != "deny" {
		t.Fatalf("after a refused approval the call was %q", d)
	}
	code, stdout, stderr := approve("y\n", "--approver-token-file", tokenFile)
	if code != exitOK || !strings.Contains(stdout, "Call:     Bash: git push origin main") || !strings.Contains(stdout, "Approved "+id) || !strings.Contains(stdout, "scope once") {
		t.Fatalf("approve: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if d, r := push(); d == "deny" {
		t.Fatalf("the identical call after the approval: %s %s", d, r)
	}
	// Once: the next identical call is asked again, as a new request.
	if d, _ := push(); d != "deny" {
		t.Fatalf("a second call after a once approval: %q, want deny", d)
	}
	// The answered request is gone.
	if code, _, stderr := approve("y\n", "--approver-token-file", tokenFile); code != exitUsage || !strings.Contains(stderr, "no_such_request") {
		t.Fatalf("an answered request: exit %d, %q", code, stderr)
	}
}

// codexPush posts a Codex PreToolUse of `git push origin main` in session
// codex-1 to the server at base and returns its decision and reason.
func codexPush(t *testing.T, base string) (decision, reason string) {
	t.Helper()
	ev := `{"hook_event_name":"PreToolUse","session_id":"codex-1","tool_name":"Bash","tool_input":{"command":"git push origin main"},"cwd":"/srv/app"}`
	resp, err := http.Post(base+"/v1/hooks/codex", "application/json", strings.NewReader(ev))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		HSO struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("codex answer %s: %v", b, err)
	}
	return out.HSO.Decision, out.HSO.Reason
}

// TestServeApprovalsDisabled: without an approver token the refusal of a
// hook's ask says approvals are disabled on this server, and names no
// command.
func TestServeApprovalsDisabled(t *testing.T) {
	srv, err := serve.New(serve.Config{Engine: celguard.Config{Sources: func() ([]policy.Source, error) {
		return []policy.Source{policies.ToolClasses(), {Name: "asks.yaml", Data: []byte(serveAsk)}}, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	d, r := codexPush(t, ts.URL)
	if d != "deny" || !strings.Contains(r, "approvals are disabled on this server") || strings.Contains(r, "celguard approve") {
		t.Fatalf("%s %q, want a deny saying approvals are disabled", d, r)
	}
}

// TestDenyServer: `celguard approve ID --deny --server URL --session-id ID`
// records a denial in the server's session (no terminal needed: it only
// refuses); the identical call is then refused with the note every time and
// makes no new request; the same denial again is stale_request, an unknown
// id no_such_request, a wrong token unauthorized.
func TestDenyServer(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "approver-token")
	if err := os.WriteFile(tokenFile, []byte("approver-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad-token")
	if err := os.WriteFile(bad, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{
		Engine: celguard.Config{Sources: func() ([]policy.Source, error) {
			return []policy.Source{policies.ToolClasses(), {Name: "asks.yaml", Data: []byte(serveAsk)}}, nil
		}},
		OperatorToken: "approver-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	_, reason := codexPush(t, ts.URL)
	m := regexp.MustCompile(`approval request ([0-9a-f]{8})`).FindStringSubmatch(reason)
	if m == nil {
		t.Fatalf("the ask's refusal names no request: %q", reason)
	}
	deny := func(id, token string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"approve", id, "--deny", "--server", ts.URL, "--session-id", "codex-1", "--approver-token-file", token}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, tc := range []struct {
		name, id, token, want string
	}{
		{"wrong token", m[1], bad, "unauthorized"},
		{"unknown request", "00000000", tokenFile, "no_such_request"},
	} {
		if code, _, stderr := deny(tc.id, tc.token); code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q, want exit %d naming %s", tc.name, code, stderr, exitUsage, tc.want)
		}
	}
	code, stdout, stderr := deny(m[1], tokenFile, "--note", "open a pull request instead")
	if code != exitOK || !strings.Contains(stdout, "Denied "+m[1]) || !strings.Contains(stdout, "Bash: git push origin main") {
		t.Fatalf("deny: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for range 2 {
		if d, r := codexPush(t, ts.URL); d != "deny" || !strings.Contains(r, "open a pull request instead") || strings.Contains(r, "approval request") {
			t.Fatalf("the denied call retried: %s %q, want a deny with the note and no new request", d, r)
		}
	}
	if code, _, stderr := deny(m[1], tokenFile); code != exitUsage || !strings.Contains(stderr, "stale_request") {
		t.Fatalf("denied twice: exit %d, %q, want stale_request", code, stderr)
	}
}
