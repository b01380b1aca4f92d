package judge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/judge"
	"github.com/celguard/celguard/policy"
)

const judgedPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: judged
rules:
  - id: judge-shell
    match: {tools: [Bash]}
    verdict: ask
    judge: reviewer
    reason: shell commands are reviewed
`

// fakeLLM is an OpenAI-compatible chat-completions server on 127.0.0.1
// that answers every request with answer (after delay), counting calls
// and keeping the last request.
type fakeLLM struct {
	*httptest.Server
	calls  atomic.Int32
	answer atomic.Value // string
	delay  time.Duration
	last   atomic.Value // map[string]any
}

func newFakeLLM(t *testing.T, answer string, delay time.Duration) *fakeLLM {
	f := &fakeLLM{delay: delay}
	f.answer.Store(answer)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.last.Store(req)
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": f.answer.Load()}}}})
	}))
	t.Cleanup(f.Close)
	return f
}

// engine decides judgedPolicy with the judge "reviewer" at f.
func (f *fakeLLM) engine(t *testing.T, timeout time.Duration) *eval.Engine {
	t.Setenv("CELGUARD_TEST_JUDGE_KEY", "sk-test")
	set, err := compile.Compile([]policy.Source{{Name: "judged.yaml", Data: []byte(judgedPolicy)}})
	require.NoError(t, err)
	cfg, err := judge.Parse([]byte(fmt.Sprintf(`{"judges": {"reviewer": {"type": "openai", "base_url": %q, "model": "m", "api_key_env": "CELGUARD_TEST_JUDGE_KEY"}}}`, f.URL+"/v1")))
	require.NoError(t, err)
	opts, err := cfg.Options()
	require.NoError(t, err)
	eng, err := eval.New(set, append(opts, eval.WithJudgeTimeout(timeout))...)
	require.NoError(t, err)
	return eng
}

func bash(cmd string) eval.Call {
	return eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: "/srv/app"}
}

// TestOpenAIJudge: the fake server answering DENY: no blocks with that
// reason, ALLOW allows, garbage or a timeout leaves the ask (nobody to ask:
// approval_required); a second identical call does not reach the server.
func TestOpenAIJudge(t *testing.T) {
	tests := []struct {
		name     string
		answer   string
		delay    time.Duration
		verdict  policy.Verdict
		code     string
		reason   string
		judgeErr string
		cached   bool // the second call is answered from the cache
	}{
		{name: "deny", answer: "DENY: no", verdict: policy.Block, code: eval.CodeJudgeDenied, reason: "judge reviewer: no", cached: true},
		{name: "allow", answer: "ALLOW", verdict: policy.Allow, cached: true},
		{name: "ask", answer: "ASK: a person should look", verdict: policy.Block, code: eval.CodeApprovalRequired, cached: true},
		{name: "garbage", answer: "Sure! I think this is fine.", verdict: policy.Block, code: eval.CodeApprovalRequired, judgeErr: "is not ALLOW"},
		{name: "timeout", answer: "ALLOW", delay: 2 * time.Second, verdict: policy.Block, code: eval.CodeApprovalRequired, judgeErr: "did not answer within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLLM(t, tt.answer, tt.delay)
			s := f.engine(t, 200*time.Millisecond).NewSession("s", nil)
			d, err := s.Before(context.Background(), bash("rm -rf build"))
			require.NoError(t, err)
			assert.Equal(t, tt.verdict, d.Verdict)
			assert.Equal(t, tt.code, d.Code)
			if tt.reason != "" {
				assert.Equal(t, tt.reason, d.Reason)
			}
			require.NotNil(t, d.Judge)
			assert.Equal(t, "reviewer", d.Judge.Name)
			if tt.judgeErr != "" {
				assert.Contains(t, d.Judge.Error, tt.judgeErr)
				assert.Equal(t, policy.Ask, d.Judge.Verdict)
			}
			require.EqualValues(t, 1, f.calls.Load())
			// The model saw the tool, the input and the directory.
			req, _ := f.last.Load().(map[string]any)
			require.NotNil(t, req)
			b, _ := json.Marshal(req["messages"])
			assert.Contains(t, string(b), `Tool: Bash\nInput (JSON): {\"command\":\"rm -rf build\"}\nWorking directory: /srv/app`)

			d2, err := s.Before(context.Background(), bash("rm -rf build"))
			require.NoError(t, err)
			assert.Equal(t, tt.verdict, d2.Verdict)
			want := int32(1)
			if !tt.cached {
				want = 2 // a failure is not an answer: asked again
			}
			assert.Equal(t, want, f.calls.Load())
			assert.Equal(t, tt.cached, d2.Judge.Cached)
			// Another call is judged afresh.
			_, err = s.Before(context.Background(), bash("ls"))
			require.NoError(t, err)
			assert.Equal(t, want+1, f.calls.Load())
		})
	}
}

// TestJudgeCacheAcrossProcesses: the cached answer is in the session's
// state, so the next hook process does not call the judge again.
func TestJudgeCacheAcrossProcesses(t *testing.T) {
	f := newFakeLLM(t, "ALLOW", 0)
	s := f.engine(t, time.Second).NewSession("s", nil)
	_, err := s.Before(context.Background(), bash("make"))
	require.NoError(t, err)
	st := s.State()
	require.Len(t, st.Judgments, 1)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var back eval.SessionState
	require.NoError(t, json.Unmarshal(b, &back))
	restored, err := f.engine(t, time.Second).RestoreSession(back)
	require.NoError(t, err)
	d, err := restored.Before(context.Background(), bash("make"))
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict)
	assert.True(t, d.Judge.Cached)
	assert.EqualValues(t, 1, f.calls.Load())
}

// TestJudgeNotConfigured: a rule naming a judge nobody configured asks.
func TestJudgeNotConfigured(t *testing.T) {
	set, err := compile.Compile([]policy.Source{{Name: "judged.yaml", Data: []byte(judgedPolicy)}})
	require.NoError(t, err)
	eng, err := eval.New(set)
	require.NoError(t, err)
	d, err := eng.NewSession("s", nil).Before(context.Background(), bash("ls"))
	require.NoError(t, err)
	assert.Equal(t, eval.CodeApprovalRequired, d.Code)
	assert.Equal(t, "judge reviewer is not configured", d.Judge.Error)
}

// TestCommandJudge: a command judge reads the request on stdin and answers
// JSON; a failing command is no answer.
func TestCommandJudge(t *testing.T) {
	j := &judge.Command{Argv: []string{"/bin/sh", "-c", `read line; case "$line" in *'"rm'*) echo '{"verdict":"deny","reason":"deletes"}';; *) echo '{"verdict":"allow"}';; esac`}}
	a, err := j.Judge(context.Background(), eval.JudgeRequest{Call: bash("rm x")})
	require.NoError(t, err)
	assert.Equal(t, eval.JudgeAnswer{Verdict: policy.Block, Reason: "deletes"}, a)
	a, err = j.Judge(context.Background(), eval.JudgeRequest{Call: bash("ls")})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, a.Verdict)
	_, err = (&judge.Command{Argv: []string{"/bin/sh", "-c", "echo oops >&2; exit 3"}}).Judge(context.Background(), eval.JudgeRequest{})
	assert.ErrorContains(t, err, "oops")
}

func TestParseAnswer(t *testing.T) {
	for in, want := range map[string]eval.JudgeAnswer{
		"ALLOW":                      {Verdict: policy.Allow},
		"allow.":                     {Verdict: policy.Allow},
		"\n DENY: writes to /etc \n": {Verdict: policy.Block, Reason: "writes to /etc"},
		"ASK: unsure\nmore text":     {Verdict: policy.Ask, Reason: "unsure"},
	} {
		got, err := judge.ParseAnswer(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "yes", "ALLOWED", "I would ALLOW this"} {
		_, err := judge.ParseAnswer(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseConfig(t *testing.T) {
	for _, bad := range []string{
		`{"judges": {"x": {"type": "openai"}}}`,
		`{"judges": {"x": {"type": "command", "command": ["judge"]}}}`,
		`{"judges": {"x": {"type": "magic"}}}`,
		`{"judges": {"bad name": {"type": "command", "command": ["/bin/true"]}}}`,
		`{"judges": {"x": {"type": "command", "command": ["/bin/true"], "timeout": "soon"}}}`,
		`{"judgez": {}}`,
	} {
		_, err := judge.Parse([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"ALLOW", "DENY: x", "ASK: y", "", "\x00", strings.Repeat("DENY:", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := judge.ParseAnswer(s)
		if err == nil && a.Verdict != policy.Allow && a.Verdict != policy.Block && a.Verdict != policy.Ask {
			t.Fatalf("%q: verdict %s", s, a.Verdict)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{"judges": {"r": {"type": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}}}`,
		`{"judges": {"c": {"type": "command", "command": ["/bin/true"], "timeout": "1s"}}}`, `{}`, `[]`, `{"judges": null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := judge.Parse(data)
		if err != nil {
			return
		}
		if _, err := c.Options(); err != nil {
			t.Fatalf("a parsed config gives no options: %v", err)
		}
	})
}

func ExampleParseAnswer() {
	for _, s := range []string{"ALLOW", "DENY: writes outside the project", "Sure, looks fine"} {
		a, err := judge.ParseAnswer(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s %q\n", a.Verdict, a.Reason)
	}
	// Output:
	// allow ""
	// block "writes outside the project"
	// error: the answer "Sure, looks fine" is not ALLOW, DENY: reason or ASK: reason
}
