package decisionlog_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// githubToken is a credential of the secret patterns' kind github_token.
const githubToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

const maskedPolicy = `
decision_log:
  mask:
    - env.*
    - {tools: [Write], args: [content]}
rules:
  - id: no-env-dump
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("env")'
    verdict: block
    message: '"refused: " + args.command + " with " + args.env.DB_PASSWORD'
    metadata: {owner: sec}
  - id: write-reason
    match: {tools: [Write]}
    condition: 'args.content.contains("password")'
    verdict: warn
    message: '"writing " + args.content'
`

// TestDecisionLogMasks: what a policy masks, and every credential, never
// reaches the log, not even through a reason a rule built from the
// arguments; the record says which paths were masked.
func TestDecisionLogMasks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := decisionlog.NewFileSink(path, decisionlog.FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": maskedPolicy}), eval.WithDecisionSink(sink, nil),
		eval.WithDecisionIDs(func() string { n++; return "id" + string(rune('0'+n)) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("sess-1", nil)
	const dbPassword = "hunter2-correct-horse"
	calls := []eval.Call{
		{Tool: "Bash", ID: "c1", Agent: eval.Agent{Name: "coder"}, Args: map[string]any{"command": "env | grep KEY", "env": map[string]any{"DB_PASSWORD": dbPassword, "HOME": "/srv/app"}}},
		{Tool: "Write", ID: "c2", Args: map[string]any{"file_path": "notes.txt", "content": "password: " + dbPassword}},
		{Tool: "Read", ID: "c3", Args: map[string]any{"file_path": "a.txt", "note": "token " + githubToken}},
		{Tool: "Edit", ID: "c4", Args: map[string]any{"content": "the Write mask is for Write only"}},
	}
	for _, c := range calls {
		if _, err := s.Before(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Input(ctx, eval.Input{Messages: []eval.Message{{Role: "user", Content: "use " + githubToken}}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{dbPassword, githubToken, "hunter2"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("the log holds %q:\n%s", leak, data)
		}
	}
	recs := readRecords(t, path)
	if len(recs) != 5 {
		t.Fatalf("got %d records, want 5", len(recs))
	}
	r := recs[0]
	if r.DecisionID != "id1" || r.SessionID != "sess-1" || r.CallID != "c1" || r.Agent.Name != "coder" || r.Tool != "Bash" ||
		r.Verdict != policy.Block || r.RuleID != "no-env-dump" || r.Phase != policy.PhaseBefore || r.Time.IsZero() ||
		!strings.HasPrefix(r.PolicyDigest, "sha256:") || r.Metadata["owner"] != "sec" {
		t.Errorf("record 1 = %+v", r)
	}
	env, _ := r.Args["env"].(map[string]any)
	if env["DB_PASSWORD"] != "[MASKED]" || env["HOME"] != "[MASKED]" || r.Args["command"] != "env | grep KEY" {
		t.Errorf("record 1 args = %v", r.Args)
	}
	if !strings.Contains(r.Reason, "refused: env | grep KEY with") || !strings.Contains(r.Reason, "[MASKED]") {
		t.Errorf("record 1 reason = %q", r.Reason)
	}
	if got := maskedPaths(r); got != "args.env.DB_PASSWORD:policy args.env.HOME:policy" {
		t.Errorf("record 1 masked = %s", got)
	}
	if recs[1].Args["content"] != "[MASKED]" || recs[1].Args["file_path"] != "notes.txt" || recs[1].Verdict != policy.Warn {
		t.Errorf("record 2 = %+v", recs[1])
	}
	if recs[2].Args["note"] != "token [REDACTED:github_token]" || maskedPaths(recs[2]) != "args.note:secret" {
		t.Errorf("record 3 = %+v", recs[2])
	}
	if recs[3].Args["content"] != "the Write mask is for Write only" {
		t.Errorf("record 4 = %+v", recs[3])
	}
	if recs[4].Phase != policy.PhaseInput || len(recs[4].Messages) != 1 || recs[4].Messages[0].Content != "use [REDACTED:github_token]" {
		t.Errorf("record 5 = %+v", recs[4])
	}
}

// TestDecisionLogFailure: a sink that fails refuses the decision
// (decision_log_failed) without onError, and reports to onError with it.
func TestDecisionLogFailure(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": "rules:\n  - id: r\n    condition: 'false'\n    verdict: block\n"})
	broken := sinkFunc(func(context.Context, *eval.DecisionEvent) error { return errors.New("disk full") })
	eng, err := eval.New(set, eval.WithDecisionSink(broken, nil))
	if err != nil {
		t.Fatal(err)
	}
	d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Bash"})
	if err == nil || d.Verdict != policy.Block || d.Code != eval.CodeDecisionLogFailed || d.DecisionID == "" {
		t.Errorf("fail closed: %+v, %v", d, err)
	}
	var reported []error
	eng, err = eval.New(set, eval.WithDecisionSink(broken, func(err error) { reported = append(reported, err) }))
	if err != nil {
		t.Fatal(err)
	}
	d, err = eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Bash"})
	if err != nil || d.Verdict != policy.Allow || len(reported) != 1 {
		t.Errorf("reported: %+v, %v, %v", d, err, reported)
	}
}

// TestDecisionLogConcurrent: sessions deciding at once through one file
// sink write one whole line per decision.
func TestDecisionLogConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := decisionlog.NewFileSink(path, decisionlog.FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": maskedPolicy}), eval.WithDecisionSink(sink, nil))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			s := eng.NewSession(string(rune('a'+g)), nil)
			for range 20 {
				if _, err := s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "env", "env": map[string]any{"X": strings.Repeat("v", 5000)}}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if recs := readRecords(t, path); len(recs) != 320 {
		t.Errorf("got %d records, want 320", len(recs))
	}
}

type sinkFunc func(context.Context, *eval.DecisionEvent) error

func (f sinkFunc) WriteDecision(ctx context.Context, ev *eval.DecisionEvent) error { return f(ctx, ev) }

func mustSet(t testing.TB, files map[string]string) *compile.PolicySet {
	t.Helper()
	var srcs []policy.Source
	for name, body := range files {
		hdr := fmt.Sprintf("apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\n", strings.TrimSuffix(name, ".yaml"))
		srcs = append(srcs, policy.Source{Name: name, Data: []byte(hdr + body)})
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return set
}

func readRecords(t *testing.T, path string) []decisionlog.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []decisionlog.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var r decisionlog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v: %s", len(out)+1, err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func maskedPaths(r decisionlog.Record) string {
	var s []string
	for _, m := range r.Masked {
		s = append(s, m.Path+":"+m.By)
	}
	return strings.Join(s, " ")
}
