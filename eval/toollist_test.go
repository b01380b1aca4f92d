package eval_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// eventSink keeps the decision events.
type eventSink struct {
	mu  sync.Mutex
	evs []eval.DecisionEvent
}

func (s *eventSink) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, *ev)
	return nil
}

// TestToolList: one record per list, with the counts and the hidden
// tools, and one per tool a rule decided something about; ToolVisible
// logs only those too; Tools still logs every tool.
func TestToolList(t *testing.T) {
	set := mustSet(t, map[string]string{"v.yaml": `rules:
  - id: hide-drop
    phase: tools
    match: {tools: [mcp__db__drop]}
    verdict: block
  - id: warn-describe
    phase: tools
    match: {tools: [mcp__db__describe]}
    verdict: warn
`})
	sink := &eventSink{}
	eng, err := eval.New(set, eval.WithDecisionSink(sink, nil))
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	ctx := context.Background()
	def := func(name string) eval.ToolDefinition {
		return eval.ToolDefinition{Tool: "mcp__db__" + name, Name: name, Agent: eval.Agent{Name: "a"}}
	}
	ds, ld, err := s.ToolList(ctx, []eval.ToolDefinition{def("query"), def("drop"), def("describe"), def("list")})
	require.NoError(t, err)
	require.Len(t, ds, 4)
	assert.Equal(t, []policy.Verdict{policy.Allow, policy.Block, policy.Warn, policy.Allow}, []policy.Verdict{ds[0].Verdict, ds[1].Verdict, ds[2].Verdict, ds[3].Verdict})
	assert.Equal(t, &eval.ToolListing{Shown: 3, Hidden: 1, HiddenTools: []string{"mcp__db__drop"}}, ld.Listing)
	assert.Equal(t, policy.PhaseTools, ld.Phase)
	assert.Equal(t, "a", ld.Agent.Name)
	var logged []string
	for _, ev := range sink.evs {
		logged = append(logged, ev.Decision.Tool)
	}
	assert.Equal(t, []string{"mcp__db__drop", "mcp__db__describe", ""}, logged, "the rules' tools, then the list")
	assert.NotNil(t, sink.evs[2].Decision.Listing)

	sink.evs = nil
	d, err := s.ToolVisible(ctx, def("query"))
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict)
	d, err = s.ToolVisible(ctx, def("drop"))
	require.NoError(t, err)
	assert.Equal(t, policy.Block, d.Verdict)
	_, err = s.Tools(ctx, def("query"))
	require.NoError(t, err)
	logged = nil
	for _, ev := range sink.evs {
		logged = append(logged, ev.Decision.Tool)
	}
	assert.Equal(t, []string{"mcp__db__drop", "mcp__db__query"}, logged, "ToolVisible logs the rule's decision alone; Tools logs every tool")
}
