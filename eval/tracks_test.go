package eval_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// trackSet compiles a trusted user policy and an untrusted project policy,
// both given as rules-only YAML.
func trackSet(t testing.TB, trusted, untrusted string) *compile.PolicySet {
	t.Helper()
	src := func(name string, layer policy.Layer, body string) policy.Source {
		return policy.Source{Name: name, Layer: layer, Data: []byte(fmt.Sprintf("apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\nrules:\n%s", name, body))}
	}
	srcs := []policy.Source{src("team", policy.LayerUser, trusted)}
	if untrusted != "" {
		p := src("repo", policy.LayerProject, untrusted)
		p.Untrusted = true
		srcs = append(srcs, p)
	}
	set, err := compile.Compile(srcs)
	require.NoError(t, err)
	return set
}

func TestUntrustedTrack(t *testing.T) {
	const trusted = `
  - {id: ask-push, priority: 10, match: {tools: [Bash]}, condition: 'args.command.startsWith("git push")', verdict: ask, reason: push}
  - {id: block-rm, match: {tools: [Bash]}, condition: 'args.command.startsWith("rm ")', verdict: block, reason: rm}
  - {id: clamp, match: {tools: [Bash]}, condition: 'has(args.timeout) && int(args.timeout) > 600', verdict: modify, modify: {set: {timeout: '600'}}}
  - {id: warn-curl, match: {tools: [Bash]}, condition: 'args.command.startsWith("curl")', verdict: warn, reason: curl}
`
	for _, tc := range []struct {
		name      string
		untrusted string
		call      eval.Call
		verdict   policy.Verdict
		rule      string
		untrust   bool
		args      map[string]any
	}{{
		name:      "an allow of any priority lifts nothing",
		untrusted: `  - {id: allow-all, priority: 100000, verdict: allow}` + "\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}},
		verdict:   policy.Block, rule: "block-rm",
	}, {
		name:      "a trusted ask stays an ask (no approver: blocked as approval_required, by the trusted rule)",
		untrusted: `  - {id: allow-all, priority: 100000, verdict: allow}` + "\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push"}},
		verdict:   policy.Block, rule: "ask-push",
	}, {
		name:      "a block where the trusted rules allow stands, and says it is the project's",
		untrusted: `  - {id: no-ls, match: {tools: [Bash]}, condition: 'args.command == "ls"', verdict: block, reason: no ls}` + "\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}},
		verdict:   policy.Block, rule: "no-ls", untrust: true,
	}, {
		name:      "on a tie the trusted decision stands",
		untrusted: `  - {id: repo-warn, verdict: warn, reason: repo}` + "\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "curl x"}},
		verdict:   policy.Warn, rule: "warn-curl",
	}, {
		name:      "the project's own allow shadows its own block, as written",
		untrusted: "  - {id: allow-ls, priority: 9, match: {tools: [Bash]}, verdict: allow}\n  - {id: no-ls, match: {tools: [Bash]}, verdict: block, reason: no}\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}},
		verdict:   policy.Allow,
	}, {
		name:      "a rewrite by the project is decided again by the trusted rules",
		untrusted: `  - {id: to-rm, match: {tools: [Bash]}, condition: 'args.command == "clean"', verdict: modify, modify: {set: {command: '"rm -rf /"'}}}` + "\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "clean"}},
		verdict:   policy.Block, rule: "block-rm",
	}, {
		name:      "a rewrite by the project is asked, never applied unseen (without an approver, refused)",
		untrusted: quietRule,
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}},
		verdict:   policy.Block, rule: "quiet", untrust: true,
	}, {
		name:      "the project cannot undo a trusted rewrite: the two never settle, and the call is refused",
		untrusted: `  - {id: unclamp, match: {tools: [Bash]}, condition: 'has(args.timeout) && int(args.timeout) != 9999', verdict: modify, modify: {set: {timeout: '9999'}}}` + "\n",
		call:      eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls", "timeout": 9999}},
		verdict:   policy.Block, rule: "",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := eval.New(trackSet(t, trusted, tc.untrusted))
			require.NoError(t, err)
			d, err := eng.NewSession("s", nil).Before(t.Context(), tc.call, eval.WithTrace())
			require.NoError(t, err)
			assert.Equal(t, tc.verdict, d.Verdict, "%+v", d)
			assert.Equal(t, tc.rule, d.RuleID)
			assert.Equal(t, tc.untrust, d.Untrusted)
			if tc.args != nil {
				assert.Equal(t, tc.args, d.Args)
			}
			if tc.verdict == policy.Block && tc.rule == "" {
				assert.Equal(t, eval.CodeRewriteConflict, d.Code)
				assert.Nil(t, d.Args)
			}
			marked := false
			for _, st := range d.Trace {
				assert.Equal(t, st.Policy == "repo", st.Untrusted, "trace step %+v", st)
				marked = marked || st.Untrusted
			}
			assert.True(t, marked, "the trace shows the project's steps")
		})
	}
}

// quietRule is an untrusted rewrite the trusted rules let through.
const quietRule = `  - {id: quiet, match: {tools: [Bash]}, condition: '!has(args.quiet)', verdict: modify, modify: {set: {quiet: 'true'}}}` + "\n"

// An untrusted project's rewrite is an ask (decide.go, rule 12): approved,
// the rewritten call runs as a modify.
func TestUntrustedRewriteIsAsked(t *testing.T) {
	set := trackSet(t, "  - {id: allow-all, verdict: allow}\n", quietRule)
	eng, err := eval.New(set, eval.WithApprover(approveAll))
	require.NoError(t, err)
	d, err := eng.NewSession("s", nil).Before(t.Context(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}})
	require.NoError(t, err)
	assert.Equal(t, policy.Modify, d.Verdict, "%+v", d)
	assert.Equal(t, "quiet", d.RuleID)
	assert.Equal(t, eval.CodeUntrustedRewrite, d.Code)
	assert.Contains(t, d.Reason, "celguard trust")
	assert.Equal(t, map[string]any{"command": "ls", "quiet": true}, d.Args)
	require.NotNil(t, d.Approval)
	assert.Equal(t, eval.ApprovalApproved, d.Approval.Outcome)

	// After the call, the project's rewrite of the result applies as it
	// is: the repository can put text before the model anyway.
	set = trackSet(t, "  - {id: allow-all, verdict: allow}\n",
		`  - {id: hide, phase: after, match: {tools: [Bash]}, verdict: modify, modify: {content: '"[hidden]"'}}`+"\n")
	eng, err = eval.New(set)
	require.NoError(t, err)
	d, err = eng.NewSession("s", nil).After(t.Context(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}}, eval.Result{Content: "x"})
	require.NoError(t, err)
	assert.Equal(t, policy.Modify, d.Verdict, "%+v", d)
	require.NotNil(t, d.Content)
	assert.Equal(t, "[hidden]", *d.Content)
}

// An untrusted ask is settled like any other: by the approver.
func TestUntrustedAskIsSettled(t *testing.T) {
	set := trackSet(t, "  - {id: allow-all, verdict: allow}\n", "  - {id: ask-all, verdict: ask, reason: repo asks}\n")
	eng, err := eval.New(set, eval.WithApprover(approveAll))
	require.NoError(t, err)
	d, err := eng.NewSession("s", nil).Before(t.Context(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict)
	require.NotNil(t, d.Approval)
	assert.Equal(t, "ask-all", d.Approval.Rule)
	assert.True(t, d.Untrusted)
}

// The untrusted project's counters live in the session with the others.
func TestUntrustedCounters(t *testing.T) {
	srcs := []policy.Source{{Name: "u.yaml", Layer: policy.LayerUser, Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: u\nrules:\n  - {id: ok, verdict: allow}\n")},
		{Name: ".celguard/r.yaml", Layer: policy.LayerProject, Untrusted: true, Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: repo
counters:
  - {name: calls, increment_when: 'true'}
rules:
  - {id: limit, condition: 'counters.calls >= 2', verdict: block, reason: too many}
`)}}
	set, err := compile.Compile(srcs)
	require.NoError(t, err)
	eng, err := eval.New(set)
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	call := eval.Call{Tool: "Read"}
	for i := range 3 {
		d, err := s.Before(t.Context(), call)
		require.NoError(t, err)
		want := policy.Allow
		if i == 2 {
			want = policy.Block
		}
		assert.Equal(t, want, d.Verdict, "call %d", i+1)
		_, err = s.After(t.Context(), call, eval.Result{})
		require.NoError(t, err)
	}
}
