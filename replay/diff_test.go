package replay_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/replay"
)

// headPolicy is the e2e policy changed: the rewrite now blocks (tighten),
// the block rule is gone (loosen), an ask rule shadowed by an earlier
// catch-all is added, and the redaction moved first.
const headPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: hosts-e2e
rules:
  - id: e2e-redact
    phase: after
    condition: 'has(result.content) && string(result.content).contains("E2ESECRET")'
    verdict: modify
    modify:
      content: 'string(result.content).replace("E2ESECRET", "REDACTED-BY-CELGUARD")'
  - id: e2e-rewrite
    condition: 'has(args.command) && string(args.command).contains("celguard-before")'
    verdict: block
    reason: no more rewriting
  - id: catch-all
    match: {tools: [Bash]}
    verdict: allow
  - id: never
    match: {tools: [Bash]}
    verdict: ask
    reason: shadowed
  - id: e2e-redact-output
    phase: output
    condition: 'secrets.has(output.text)'
    verdict: modify
    modify:
      output: 'secrets.redact(output.text)'
`

func engineOf(t *testing.T, ref replay.PolicyRef) *replay.Engine {
	t.Helper()
	cfg, err := ref.Config(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := replay.NewEngine(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// TestDiffHosts replays the real hosts' records under the e2e policy and
// under headPolicy: every flip is grouped by the rule that decides now and
// the rule that used to, with one example; the static diff names the
// rules added, removed, changed, reordered and newly shadowed.
func TestDiffHosts(t *testing.T) {
	head := filepath.Join(t.TempDir(), "head.yaml")
	if err := os.WriteFile(head, []byte(headPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	base := engineOf(t, replay.PolicyRef{Ref: filepath.Join(hostRecords, "policy.yaml")})
	r, err := replay.Diff(context.Background(), base, engineOf(t, replay.PolicyRef{Ref: head}), []string{hostRecords}, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) != 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	// Claude Code and Codex record the model's call: the rewrite now
	// blocks it (tighten); the blocked calls are allowed now (loosen).
	if r.Tightened == 0 || r.Loosened == 0 || !r.Fails(replay.FailAny) || !r.Fails(replay.FailLoosen) || !r.Fails(replay.FailTighten) || r.Fails("") {
		t.Errorf("flips: %d loosened, %d tightened", r.Loosened, r.Tightened)
	}
	var b bytes.Buffer
	if err := replay.WriteDiffText(&b, r); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(b.String(), head, "head.yaml")
	for _, want := range []string{
		"modify → block (tighten), decided by hosts-e2e/e2e-rewrite (head.yaml:11), was hosts-e2e/e2e-rewrite (testdata/hosts/policy.yaml:16)",
		"block → allow (loosen), decided by hosts-e2e/catch-all (head.yaml:15), was hosts-e2e/e2e-block (testdata/hosts/policy.yaml:5)",
		"rules added: 2\n  hosts-e2e/catch-all (head.yaml:15): before allow\n  hosts-e2e/never (head.yaml:18): before ask\n",
		"rules removed: 2\n  hosts-e2e/e2e-block (testdata/hosts/policy.yaml:5): before block\n  hosts-e2e/e2e-ask (testdata/hosts/policy.yaml:9): before ask\n",
		"rules changed: 1\n  hosts-e2e/e2e-rewrite (head.yaml:11): before block (verdict modify → block, reason)\n",
		"rules reordered: 2\n",
		"rules shadowed: 1\n  hosts-e2e/never (head.yaml:18): before ask (shadowed_rule: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the diff does not say %q:\n%s", want, text)
		}
	}
	b.Reset()
	if err := replay.WriteDiffGitHub(&b, r, replay.FailLoosen); err != nil {
		t.Fatal(err)
	}
	gh := b.String()
	for _, want := range []string{"::error file=" + head + ",line=15,title=celguard diff%3A block → allow::", "::warning file=" + head + ",line=11,", "::notice title=celguard diff::"} {
		if !strings.Contains(gh, want) {
			t.Errorf("the annotations do not say %q:\n%s", want, gh)
		}
	}
	// The same policies on both sides: nothing flips.
	same, err := replay.Diff(context.Background(), base, engineOf(t, replay.PolicyRef{Ref: filepath.Join(hostRecords, "policy.yaml")}), []string{hostRecords}, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if same.Flips != 0 || len(same.Static.Added)+len(same.Static.Removed)+len(same.Static.Changed)+len(same.Static.Reordered) != 0 {
		t.Errorf("a set against itself: %+v", same)
	}
}

// TestPolicyRefGit reads a directory's policies at a git revision, and
// says when the revision is missing.
func TestPolicyRefGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	dir := t.TempDir()
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, data string) {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun("init", "-q")
	policy, _ := os.ReadFile(filepath.Join(hostRecords, "policy.yaml"))
	write("pol/p.yaml", string(policy))
	write("pol/p_test.yaml", "cases: []\n")
	write("pol/testdata/x.yaml", "not: a policy\n")
	gitRun("add", ".")
	gitRun("commit", "-qm", "one")
	write("pol/p.yaml", headPolicy)
	gitRun("commit", "-qam", "two")

	base := engineOf(t, replay.PolicyRef{Ref: "HEAD~1:pol", WorkDir: dir})
	head := engineOf(t, replay.PolicyRef{Ref: "pol", WorkDir: dir})
	r, err := replay.Diff(context.Background(), base, head, []string{hostRecords}, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Flips == 0 || len(r.Static.Removed) != 2 || r.Static.Removed[0].File != "HEAD~1:pol/p.yaml" {
		t.Errorf("flips %d, removed %+v", r.Flips, r.Static.Removed)
	}
	_, err = replay.PolicyRef{Ref: "HEAD~5:pol", WorkDir: dir}.Config(context.Background())
	if !errors.Is(err, replay.ErrNoRevision) {
		t.Errorf("a missing revision: %v", err)
	}
}
