package eval_test

import (
	"context"
	"errors"
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

// failSink fails every write.
type failSink struct{}

func (failSink) WriteDecision(context.Context, *eval.DecisionEvent) error {
	return errors.New("the log is full")
}

// TestTee: a tee is transient only when every sink is, and writes each
// sink in turn until the first failure, which is the write's.
func TestTee(t *testing.T) {
	yes, no := &pointerSink{transient: true}, &pointerSink{}
	assert.True(t, eval.Tee{yes, yes}.Transient())
	assert.True(t, eval.Tee{}.Transient())
	assert.False(t, eval.Tee{yes, no}.Transient(), "a sink that keeps events")
	assert.False(t, eval.Tee{yes, failSink{}}.Transient(), "a sink that does not say it is transient")

	first, last := &pointerSink{}, &pointerSink{}
	ev := &eval.DecisionEvent{Decision: eval.Decision{Tool: "Bash"}}
	require.NoError(t, eval.Tee{first, last}.WriteDecision(context.Background(), ev))
	assert.Equal(t, []string{"Bash"}, first.seen)
	assert.Equal(t, []string{"Bash"}, last.seen)
	err := eval.Tee{first, failSink{}, last}.WriteDecision(context.Background(), ev)
	require.EqualError(t, err, "the log is full")
	assert.Len(t, first.seen, 2)
	assert.Len(t, last.seen, 1, "a sink after the failure is not written")
}

// TestDecisionEventCommits: a decision's event lists its commits to the
// store, each in its own event (the notes' first commit is kept inline),
// and none without a store (nil, not empty).
func TestDecisionEventCommits(t *testing.T) {
	set := mustSet(t, map[string]string{"cap.yaml": sharedCap})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		store eval.Option
		want  []string // each event's commit outcomes, nil for none
	}{
		{"no store", nil, nil},
		{"a store", eval.WithStore(&recordStore{}), []string{eval.StoreCommitted}},
		{"always changed elsewhere", eval.WithStore(&faultStore{}), []string{eval.StoreConflict, eval.StoreConflict, eval.StoreConflict}},
		{"unreachable", eval.WithStore(&faultStore{err: errors.New("down")}), []string{eval.StoreUnavailable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &pointerSink{}
			opts := []eval.Option{eval.WithDecisionSink(sink, nil), eval.WithStoreRetries(3)}
			if tc.store != nil {
				opts = append(opts, tc.store)
			}
			eng, err := eval.New(set, opts...)
			require.NoError(t, err)
			s := eng.NewSession("s", map[string]any{"repository": "r"})
			for range 3 {
				_, err := s.Before(ctx, eval.Call{Tool: "Bash"})
				require.NoError(t, err)
			}
			require.Len(t, sink.evs, 3)
			for i, ev := range sink.evs {
				if tc.want == nil {
					assert.Nil(t, ev.Commits, "event %d", i)
					continue
				}
				var got []string
				for _, c := range ev.Commits {
					got = append(got, c.Outcome)
					assert.False(t, c.End.Before(c.Start), "event %d: a commit ends before it starts", i)
				}
				assert.Equal(t, tc.want, got, "event %d", i)
			}
			// Each event keeps its own commits.
			if tc.want != nil {
				assert.NotSame(t, &sink.evs[0].Commits[0], &sink.evs[1].Commits[0])
			}
		})
	}
}
