package eval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// pointerSink keeps the events it is given by pointer, and says whether
// it is transient as told.
type pointerSink struct {
	transient bool
	evs       []*eval.DecisionEvent
	seen      []string // each event's tool when it was written
}

func (s *pointerSink) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	s.evs = append(s.evs, ev)
	s.seen = append(s.seen, ev.Decision.Tool)
	return nil
}

func (s *pointerSink) Transient() bool { return s.transient }

// TestTransientSink: a sink that says it keeps nothing of an event gets
// every decision's event in full all the same; one that does not say so
// (or says it keeps them) gets events that are never reused, so those it
// keeps stay as they were written.
func TestTransientSink(t *testing.T) {
	set := mustSet(t, map[string]string{"v.yaml": `rules:
  - id: no-push
    match: {tools: [Push]}
    verdict: block
    reason: no pushing
`})
	tools := []string{"Push", "Read", "Push", "Edit"}
	for _, transient := range []bool{false, true} {
		sink := &pointerSink{transient: transient}
		eng, err := eval.New(set, eval.WithDecisionSink(sink, nil))
		require.NoError(t, err)
		s := eng.NewSession("s", nil)
		for _, tool := range tools {
			d, err := s.Before(context.Background(), eval.Call{Tool: tool})
			require.NoError(t, err)
			assert.Equal(t, tool == "Push", d.Verdict == policy.Block)
		}
		require.Equal(t, tools, sink.seen, "transient %v: the events as written", transient)
		if transient {
			continue
		}
		for i, ev := range sink.evs {
			assert.Equal(t, tools[i], ev.Decision.Tool, "a kept event was changed after it was written")
			assert.Equal(t, "s", ev.Decision.SessionID)
		}
	}
}
