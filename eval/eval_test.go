package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

const countersPolicy = `
counters:
  - name: fails
    key: 'tool + ":" + canonical(args)'
    increment_when: 'result.is_error'
  - name: web
    scope: session
    window: 60s
    increment_when: 'tool == "WebFetch"'
rules:
  - id: too-many-fails
    condition: 'counters.fails >= 3'
    verdict: block
  - id: rate
    match: {tools: [WebFetch]}
    condition: 'counters.web >= 2'
    verdict: block
    message: '"rate limited: " + string(counters.web) + " calls"'
`

func TestDecisionJSONFieldNames(t *testing.T) {
	content := "x"
	d := eval.Decision{Verdict: policy.Modify, Phase: policy.PhaseAfter, Tool: "Bash", RuleRef: compile.RuleRef{RuleID: "r", Policy: "p", File: "p.yaml", Line: 3},
		Reason: "why", Code: "c", Args: map[string]any{"a": 1}, Content: &content, Modified: []string{"r"},
		Approval: &eval.ApprovalRecord{Rule: "r", Outcome: "approved"}, Error: "e", StateTampered: true,
		Trace: []eval.TraceStep{{Rule: "r", Policy: "p", Verdict: "modify", Outcome: "applied"}}}
	b, err := json.Marshal(d)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	want := []string{"verdict", "phase", "tool", "rule_id", "policy", "file", "line", "reason", "code", "args", "content", "modified_by", "approval", "error", "state_tampered", "trace"}
	for _, k := range want {
		assert.Contains(t, m, k)
	}
	assert.Len(t, m, len(want), "unexpected extra fields: %s", b)
	assert.Equal(t, "modify", m["verdict"])
	assert.Equal(t, "after", m["phase"])
}

func TestResultJSONRoundTrip(t *testing.T) {
	var r eval.Result
	require.NoError(t, json.Unmarshal([]byte(`{"is_error":true,"content":"boom","exit_code":2}`), &r))
	assert.True(t, r.IsError)
	assert.Equal(t, "boom", r.Content)
	assert.Equal(t, 2.0, r.Fields["exit_code"])
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"is_error":true,"content":"boom","exit_code":2}`, string(b))

	require.NoError(t, json.Unmarshal([]byte(`{"content":[{"type":"text","text":"hi"}]}`), &r))
	assert.Equal(t, `[{"text":"hi","type":"text"}]`, r.Content, "structured content is kept as JSON text")
	assert.Error(t, json.Unmarshal([]byte(`{"is_error":"yes"}`), &r))
}

func TestWindowCounterUsesInjectedClock(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": countersPolicy})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eng, err := eval.New(set, eval.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	ctx := context.Background()
	web := eval.Call{Tool: "WebFetch", Args: map[string]any{"url": "https://example.com"}}
	for i := 0; i < 2; i++ {
		_, err := s.After(ctx, web, eval.Result{})
		require.NoError(t, err)
		now = now.Add(10 * time.Second)
	}
	d, err := s.Before(ctx, web)
	require.NoError(t, err)
	assert.Equal(t, policy.Block, d.Verdict)
	assert.Equal(t, "rate limited: 2 calls", d.Reason)

	now = now.Add(45 * time.Second) // the first event is now 65 s old
	d, _ = s.Before(ctx, web)
	assert.Equal(t, policy.Allow, d.Verdict, "one event left in the window")

	s.StartTurn() // session scope: a new turn keeps the count
	_, _ = s.After(ctx, web, eval.Result{})
	d, _ = s.Before(ctx, web)
	assert.Equal(t, policy.Block, d.Verdict)
}

func TestCounterKeysAreBounded(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": countersPolicy})
	eng, err := eval.New(set, eval.WithMaxCounterKeys(3))
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	ctx := context.Background()
	call := func(i int) eval.Call { return eval.Call{Tool: "Bash", Args: map[string]any{"n": float64(i)}} }
	for i := 0; i < 3; i++ {
		_, _ = s.After(ctx, call(0), eval.Result{IsError: true})
	}
	d, _ := s.Before(ctx, call(0))
	require.Equal(t, policy.Block, d.Verdict)
	// Three other keys push key 0 out (least recently touched).
	for i := 1; i <= 3; i++ {
		_, _ = s.After(ctx, call(i), eval.Result{IsError: true})
	}
	d, _ = s.Before(ctx, call(0))
	assert.Equal(t, policy.Allow, d.Verdict, "the evicted key starts again from zero")
	// The most recent keys are kept.
	for i := 0; i < 2; i++ {
		_, _ = s.After(ctx, call(3), eval.Result{IsError: true})
	}
	d, _ = s.Before(ctx, call(3))
	assert.Equal(t, policy.Block, d.Verdict)

	_, err = eval.New(set, eval.WithMaxCounterKeys(0))
	assert.Error(t, err)
}

func TestRuntimeErrorsFailClosedOrOpen(t *testing.T) {
	set := mustSet(t, map[string]string{
		"a.yaml": `
rules:
  - id: needs-path
    priority: 10
    match: {tools: [Read]}
    condition: 'args.file_path.startsWith("/etc")'
    verdict: block
`,
		"b.yaml": `
defaults: {failure_policy: open}
rules:
  - id: lenient
    priority: 20
    match: {tools: [Write]}
    condition: 'args.file_path.startsWith("/etc")'
    verdict: block
`})
	eng, _ := eval.New(set)
	s := eng.NewSession("s", nil)
	d, err := s.Before(context.Background(), eval.Call{Tool: "Read", Args: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, policy.Block, d.Verdict)
	assert.Equal(t, eval.CodePolicyError, d.Code)
	assert.Equal(t, "needs-path", d.RuleID)
	assert.Contains(t, d.Reason, "needs-path")
	assert.Contains(t, d.Error, "no such key")

	d, err = s.Before(context.Background(), eval.Call{Tool: "Write", Args: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "failure_policy open skips the rule")
}

func TestCostLimitFailsClosed(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": `
rules:
  - id: quadratic
    condition: 'args.items.all(x, args.items.all(y, x != y || true))'
    verdict: allow
`})
	eng, _ := eval.New(set)
	items := make([]any, 3000)
	for i := range items {
		items[i] = float64(i)
	}
	d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "X", Args: map[string]any{"items": items}})
	require.NoError(t, err)
	assert.Equal(t, policy.Block, d.Verdict)
	assert.Equal(t, eval.CodePolicyError, d.Code)
	assert.Contains(t, d.Error, "cost")
}

func TestCanceledContextFailsClosed(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": "rules:\n  - id: any\n    verdict: allow\n"})
	eng, _ := eval.New(set)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := eng.NewSession("s", nil).Before(ctx, eval.Call{Tool: "Bash"})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, policy.Block, d.Verdict)
	assert.Equal(t, eval.CodeCanceled, d.Code)
	assert.False(t, d.Allowed())
}

func TestCallWithoutToolIsRefused(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": "rules:\n  - id: any\n    verdict: allow\n"})
	eng, _ := eval.New(set)
	d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{})
	assert.Error(t, err)
	assert.Equal(t, policy.Block, d.Verdict)
	assert.Equal(t, eval.CodeInvalidCall, d.Code)
}

func TestTraceListsEveryRuleConsidered(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": `
rules:
  - id: other-tool
    priority: 30
    match: {tools: [Write]}
    verdict: block
  - id: false-cond
    priority: 20
    condition: 'tool == "nope"'
    verdict: block
  - id: rewrite
    priority: 15
    condition: '!has(args.safe)'
    verdict: modify
    modify: {set: {safe: 'true'}}
  - id: fires
    priority: 10
    verdict: warn
    reason: fired
  - id: never-reached
    verdict: block
`})
	eng, _ := eval.New(set)
	d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Bash"}, eval.WithTrace())
	require.NoError(t, err)
	var got []string
	for _, st := range d.Trace {
		got = append(got, st.Rule+":"+string(st.Outcome))
	}
	assert.Equal(t, []string{
		"other-tool:tool_not_matched", "false-cond:no_match", "rewrite:applied",
		"other-tool:tool_not_matched", "false-cond:no_match", "rewrite:already_applied", "fires:matched",
	}, got)
	assert.Equal(t, policy.Warn, d.Verdict)
	assert.Equal(t, map[string]any{"safe": true}, d.Args)
}

// TestConcurrentSessionsDuringHotSwap runs many sessions on one Engine while
// the set is swapped back and forth; run it with -race. Every decision must
// come from one of the two sets, and counters must survive the swaps.
func TestConcurrentSessionsDuringHotSwap(t *testing.T) {
	setA := mustSet(t, map[string]string{"loop.yaml": countersPolicy + `
  - id: from-a
    match: {tools: [Probe]}
    verdict: warn
`})
	setB := mustSet(t, map[string]string{"loop.yaml": countersPolicy + `
  - id: from-b
    match: {tools: [Probe]}
    verdict: warn
`})
	eng, err := eval.New(setA)
	require.NoError(t, err)
	ctx := context.Background()
	const sessions, calls = 16, 200
	stop := make(chan struct{})
	var swaps sync.WaitGroup
	swaps.Add(1)
	go func() {
		defer swaps.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			set := setA
			if i%2 == 1 {
				set = setB
			}
			require.NoError(t, eng.Swap(set))
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan string, sessions*calls)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := eng.NewSession(fmt.Sprintf("s%d", i), map[string]any{"agent": "test"})
			failing := eval.Call{Tool: "Bash", Args: map[string]any{"command": fmt.Sprintf("make %d", i)}}
			for j := 0; j < calls; j++ {
				d, err := s.Before(ctx, eval.Call{Tool: "Probe"})
				if err != nil || (d.RuleID != "from-a" && d.RuleID != "from-b") {
					errs <- fmt.Sprintf("probe: %v %+v", err, d)
				}
				if j%50 == 0 {
					s.StartTurn()
				}
				_, _ = s.After(ctx, failing, eval.Result{IsError: true})
				_, _ = s.After(ctx, failing, eval.Result{IsError: true})
				_, _ = s.After(ctx, failing, eval.Result{IsError: true})
				d, _ = s.Before(ctx, failing)
				if d.RuleID != "too-many-fails" {
					errs <- fmt.Sprintf("counters lost across a swap: %+v", d)
				}
			}
		}(i)
	}
	wg.Wait()
	close(stop)
	swaps.Wait()
	close(errs)
	var msgs []string
	for m := range errs {
		msgs = append(msgs, m)
	}
	assert.Empty(t, msgs, strings.Join(msgs[:min(len(msgs), 5)], "\n"))
}

func TestSwapRejectsNil(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": "rules:\n  - id: any\n    verdict: allow\n"})
	eng, _ := eval.New(set)
	assert.Error(t, eng.Swap(nil))
	assert.Same(t, set, eng.PolicySet())
	_, err := eval.New(nil)
	assert.Error(t, err)
}

func TestLongCounterKeysAreBounded(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": `
counters:
  - name: fails
    key: 'tool + ":" + string(args.content)'
    increment_when: 'result.is_error'
rules:
  - id: stop
    condition: 'counters.fails >= 2'
    verdict: block
`})
	eng, _ := eval.New(set)
	s := eng.NewSession("s", nil)
	ctx := context.Background()
	big := func(c string) eval.Call {
		return eval.Call{Tool: "Write", Args: map[string]any{"content": strings.Repeat(c, 100_000)}}
	}
	for i := 0; i < 2; i++ {
		_, _ = s.After(ctx, big("a"), eval.Result{IsError: true})
	}
	d, _ := s.Before(ctx, big("a"))
	assert.Equal(t, policy.Block, d.Verdict, "a long key still counts")
	d, _ = s.Before(ctx, big("b"))
	assert.Equal(t, policy.Allow, d.Verdict, "long keys stay distinct")
	for _, k := range s.State().Counters["c/fails"].Keys {
		assert.LessOrEqual(t, len(k.Key), 256+1+64)
	}
}

func TestWindowCountersForgetIdleKeys(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": `
counters:
  - name: calls
    scope: session
    window: 10s
    key: 'string(args.n)'
    increment_when: 'true'
rules:
  - id: r
    condition: 'counters.calls > 100'
    verdict: block
`})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eng, _ := eval.New(set, eval.WithClock(func() time.Time { return now }))
	s := eng.NewSession("s", nil)
	for i := 0; i < 1000; i++ {
		_, _ = s.After(context.Background(), eval.Call{Tool: "T", Args: map[string]any{"n": float64(i)}}, eval.Result{})
		now = now.Add(time.Second)
	}
	// Only keys whose events are still in the window, plus at most the
	// ones not yet visited by pruning, are kept: far fewer than 1000.
	assert.Less(t, len(s.State().Counters["c/calls"].Keys), 20)
}

// The outcome types keep the JSON strings hosts and audit logs read.
func TestOutcomeJSONStrings(t *testing.T) {
	b, err := json.Marshal([]any{
		eval.OutcomeToolNotMatched, eval.OutcomeNoMatch, eval.OutcomeMatched, eval.OutcomeApplied, eval.OutcomeAlreadyApplied, eval.OutcomeError,
		eval.ApprovalRemembered, eval.ApprovalUnavailable, eval.ApprovalError, eval.ApprovalApproved, eval.ApprovalDeferred, eval.ApprovalDenied, eval.ApprovalTimeout,
	})
	require.NoError(t, err)
	assert.JSONEq(t, `["tool_not_matched","no_match","matched","applied","already_applied","error",
		"remembered","unavailable","error","approved","deferred","denied","timeout"]`, string(b))
}
