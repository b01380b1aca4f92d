package eval_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// TestStateSurvivesJSONRoundTrip plays one process per call, as hook
// adapters do: each step restores the session from JSON, decides, and saves.
func TestStateSurvivesJSONRoundTrip(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": countersPolicy + `
  - id: confirm
    match: {tools: [Deploy]}
    verdict: ask
  - id: stop
    match: {tools: [Stop]}
    verdict: halt
`})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	approvals := 0
	eng, err := eval.New(set, eval.WithClock(func() time.Time { return now }),
		eval.WithApprover(eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
			approvals++
			return eval.Approval{Answer: eval.Approve, Remember: eval.RememberRule}, nil
		})))
	require.NoError(t, err)
	saved := []byte(`{"id":"s1","meta":{"agent":"codex"}}`)
	step := func(f func(s *eval.Session) eval.Decision) eval.Decision {
		var st eval.SessionState
		require.NoError(t, json.Unmarshal(saved, &st))
		s, err := eng.RestoreSession(st)
		require.NoError(t, err)
		d := f(s)
		saved, err = json.Marshal(s.State())
		require.NoError(t, err)
		return d
	}
	ctx := context.Background()
	fail := eval.Call{Tool: "Bash", Args: map[string]any{"command": "make"}}
	for i := 0; i < 3; i++ {
		step(func(s *eval.Session) eval.Decision {
			d, _ := s.After(ctx, fail, eval.Result{IsError: true})
			return d
		})
	}
	d := step(func(s *eval.Session) eval.Decision { d, _ := s.Before(ctx, fail); return d })
	assert.Equal(t, "too-many-fails", d.RuleID, "counts carried across processes")

	for i := 0; i < 2; i++ {
		d = step(func(s *eval.Session) eval.Decision {
			d, _ := s.Before(ctx, eval.Call{Tool: "Deploy"})
			return d
		})
	}
	assert.Equal(t, 1, approvals, "the remembered approval carried across processes")
	assert.Equal(t, eval.ApprovalRemembered, d.Approval.Outcome)

	step(func(s *eval.Session) eval.Decision { d, _ := s.Before(ctx, eval.Call{Tool: "Stop"}); return d })
	d = step(func(s *eval.Session) eval.Decision { d, _ := s.Before(ctx, eval.Call{Tool: "Read"}); return d })
	assert.Equal(t, policy.Halt, d.Verdict, "a halt holds across processes")
	assert.Equal(t, eval.CodeTurnHalted, d.Code)

	d = step(func(s *eval.Session) eval.Decision {
		s.StartTurn()
		d, _ := s.Before(ctx, fail)
		return d
	})
	assert.Equal(t, policy.Allow, d.Verdict, "a new turn resets turn counters and lifts the halt")

	var st eval.SessionState
	require.NoError(t, json.Unmarshal(saved, &st))
	assert.Equal(t, "codex", st.Meta["agent"])
	assert.Equal(t, uint64(2), st.Turn)
}

func TestRestoreSessionAppliesBounds(t *testing.T) {
	set := mustSet(t, map[string]string{"c.yaml": countersPolicy})
	eng, _ := eval.New(set, eval.WithMaxCounterKeys(2))
	st := eval.SessionState{ID: "s", Turn: 1, Counters: map[string]eval.CounterState{
		"c/fails": {Turn: 1, Keys: []eval.KeyCount{{Key: "a", Count: 5}, {Key: "b", Count: 5}, {Key: "c", Count: 5}}},
	}}
	s, err := eng.RestoreSession(st)
	require.NoError(t, err)
	got := s.State().Counters["c/fails"].Keys
	require.Len(t, got, 2)
	assert.Equal(t, "a", got[0].Key, "the most recently touched keys are kept")
	_, err = eng.RestoreSession(eval.SessionState{})
	assert.Error(t, err)
}
