package eval_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
)

// TestBeforeCounterConcurrentCap decides many calls at once on one session
// against a before-counter: the count read, the decision and the increment
// are one step, so a cap of K lets exactly K calls through, whatever the
// interleaving. Run it with -race.
func TestBeforeCounterConcurrentCap(t *testing.T) {
	const goroutines = 64
	for _, tc := range []struct {
		name string
		cap  string
		want int64
		// approve settles the ask rule of the Deploy calls.
		ask bool
	}{
		{name: "cap of 1", cap: "1", want: 1},
		{name: "cap of 30", cap: "30", want: 30},
		{name: "cap of 1 through approved asks", cap: "1", want: 1, ask: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, map[string]string{"cap.yaml": `
counters:
  - name: calls
    phase: before
    scope: session
    increment_when: 'true'
rules:
  - id: cap
    condition: 'counters.calls >= ` + tc.cap + `'
    verdict: block
  - id: ask-deploy
    match: {tools: [Deploy]}
    verdict: ask
`})
			approver := eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
				return eval.Approval{Answer: eval.Approve}, nil
			})
			eng, err := eval.New(set, eval.WithApprover(approver))
			require.NoError(t, err)
			s := eng.NewSession("s", nil)
			tool := "Bash"
			if tc.ask {
				tool = "Deploy"
			}
			var allowed, blocked atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					d, err := s.Before(context.Background(), eval.Call{Tool: tool, Args: map[string]any{"command": "ls"}})
					if !assert.NoError(t, err) {
						return
					}
					if d.Allowed() {
						allowed.Add(1)
					} else if assert.Equal(t, "cap", d.RuleID, "a refused call is refused by the cap") {
						blocked.Add(1)
					}
				}()
			}
			close(start)
			wg.Wait()
			assert.Equal(t, tc.want, allowed.Load(), "calls let through against a cap of %s", tc.cap)
			assert.Equal(t, goroutines-tc.want, blocked.Load())
		})
	}
}
