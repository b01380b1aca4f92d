package compile_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// layeredPolicy is lintPolicy in a layer, untrusted or not.
func layeredPolicy(name string, layer policy.Layer, untrusted bool, body string) policy.Source {
	s := lintPolicy(name, body)
	s.Layer, s.Untrusted = layer, untrusted
	return s
}

// shadowFindings checks the sources and returns the shadowing warnings
// (shadowed_rule, cross_layer_shadowed) as "code file:line:col
// [related...]", in order, with the set and the diagnostics.
func shadowFindings(t *testing.T, srcs []policy.Source) ([]string, *compile.PolicySet, policy.Diagnostics) {
	t.Helper()
	set, ds, err := compile.Check(srcs)
	require.NoError(t, err)
	require.False(t, ds.HasErrors(), "the fixture must compile:\n%v", ds)
	var out []string
	var found policy.Diagnostics
	for _, d := range ds {
		if d.Code != policy.CodeShadowedRule && d.Code != policy.CodeCrossLayerShadowed {
			continue
		}
		assert.Equal(t, policy.SeverityWarning, d.Severity, "%v", d)
		s := fmt.Sprintf("%s %s", d.Code, d.Pos)
		// Sorted: the order of several pre-empting rules is the set's.
		var related []string
		for _, r := range d.Related {
			related = append(related, r.String())
		}
		slices.Sort(related)
		for _, r := range related {
			s += " " + r
		}
		out = append(out, s)
		found = append(found, d)
	}
	return out, set, found
}

const (
	blockBash = `rules:
  - id: block-bash
    priority: 100
    match: {tools: [Bash]}
    verdict: block
    reason: r
`
	warnBash = `rules:
  - id: warn-bash
    priority: 10
    match: {tools: [Bash]}
    condition: 'tool == "Bash"'
    verdict: warn
    reason: r
`
	allowAll = `rules:
  - id: allow-all
    priority: 1000
    verdict: allow
`
	blockWrite = `rules:
  - id: block-write
    priority: 100
    match: {tools: [Write]}
    verdict: block
    reason: r
`
	warnBashWrite = `rules:
  - id: warn-both
    priority: 10
    match: {tools: [Bash, Write]}
    condition: 'tool != ""'
    verdict: warn
    reason: r
`
)

// TestCrossLayerShadowed: a rule always pre-empted by a rule of another
// layer is reported as cross_layer_shadowed, at the rule, with the
// pre-empting rule's position; within one layer it stays shadowed_rule;
// rules of an untrusted source decide on their own, so they neither shadow
// nor are shadowed by the trusted layers' rules. The cases hold in any
// order that keeps a higher layer's rule of higher priority first.
func TestCrossLayerShadowed(t *testing.T) {
	const (
		builtin  = policy.LayerBuiltin
		user     = policy.LayerUser
		project  = policy.LayerProject
		explicit = policy.LayerExplicit
	)
	tests := []struct {
		name string
		srcs []policy.Source
		want []string
	}{
		{"a user block pre-empts a built-in warning", []policy.Source{
			layeredPolicy("u", user, false, blockBash),
			layeredPolicy("b", builtin, false, warnBash),
		}, []string{"cross_layer_shadowed b.yaml:5:9 u.yaml:5:9"}},
		{"in one layer it is shadowed_rule", []policy.Source{
			layeredPolicy("u", user, false, blockBash),
			layeredPolicy("v", user, false, warnBash),
		}, []string{"shadowed_rule v.yaml:5:9 u.yaml:5:9"}},
		{"an explicit allow-everything pre-empts the user's rule", []policy.Source{
			layeredPolicy("e", explicit, false, allowAll),
			layeredPolicy("u", user, false, warnBash),
		}, []string{"cross_layer_shadowed u.yaml:5:9 e.yaml:5:9"}},
		{"rules of two layers cover the tools together", []policy.Source{
			layeredPolicy("u", user, false, blockBash),
			layeredPolicy("b", builtin, false, blockWrite+warnBashWrite[len("rules:\n"):]),
		}, []string{"cross_layer_shadowed b.yaml:10:9 b.yaml:5:9 u.yaml:5:9"}},
		{"a conditional rule of a higher layer pre-empts nothing", []policy.Source{
			layeredPolicy("u", user, false, warnBash),
			layeredPolicy("b", builtin, false, `rules:
  - id: late
    match: {tools: [Bash]}
    verdict: ask
    reason: r
`),
		}, nil},
		{"a modify rule of a higher layer pre-empts nothing", []policy.Source{
			layeredPolicy("u", user, false, `rules:
  - id: rewrite
    priority: 100
    verdict: modify
    modify: {set: {command: '"ls"'}}
`),
			layeredPolicy("b", builtin, false, warnBash),
		}, nil},
		{"a rule of the other phase pre-empts nothing", []policy.Source{
			layeredPolicy("u", user, false, `rules:
  - id: after-all
    priority: 1000
    phase: after
    verdict: block
    reason: r
`),
			layeredPolicy("b", builtin, false, warnBash),
		}, nil},
		{"an untrusted allow-everything pre-empts no trusted rule", []policy.Source{
			layeredPolicy("p", project, true, allowAll),
			layeredPolicy("u", user, false, warnBash),
			layeredPolicy("b", builtin, false, blockWrite),
		}, nil},
		{"an untrusted rule is not pre-empted by a trusted one", []policy.Source{
			layeredPolicy("u", user, false, blockBash),
			layeredPolicy("p", project, true, warnBash),
		}, nil},
		{"an untrusted project's allow shadows its own block", []policy.Source{
			layeredPolicy("p", project, true, allowAll),
			layeredPolicy("q", project, true, warnBash),
		}, []string{"shadowed_rule q.yaml:5:9 p.yaml:5:9"}},
		{"trusted, the project's allow-everything pre-empts the user's rule", []policy.Source{
			layeredPolicy("p", project, false, allowAll),
			layeredPolicy("u", user, false, warnBash),
		}, []string{"cross_layer_shadowed u.yaml:5:9 p.yaml:5:9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, _ := shadowFindings(t, tt.srcs)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestCrossLayerShadowedMessage: the message names both rules, both layers
// and the pre-empting rule's position.
func TestCrossLayerShadowedMessage(t *testing.T) {
	_, _, ds := shadowFindings(t, []policy.Source{
		layeredPolicy("u", policy.LayerUser, false, blockBash),
		layeredPolicy("b", policy.LayerBuiltin, false, warnBash),
	})
	require.Len(t, ds, 1)
	assert.Equal(t, `rule "warn-bash" (builtin layer) can never decide: rule "block-bash" (user layer, u.yaml:5:9, verdict block) comes first in the order the layers are tried in, with no condition and a matcher that covers every tool this rule matches`, ds[0].Message)
}

// TestCrossLayerShadowedFollowsTheSetOrder: whatever order the set tries
// its rules in, every rule reported as pre-empted comes after the rules
// that pre-empt it among the candidates of each tool it names, and a rule
// the order puts first is never reported. The fixture puts a lower layer's
// rule at a higher priority, where the orders by priority and by layer
// disagree.
func TestCrossLayerShadowedFollowsTheSetOrder(t *testing.T) {
	srcs := []policy.Source{
		layeredPolicy("u", policy.LayerUser, false, `rules:
  - id: user-block
    priority: 5
    match: {tools: [Bash]}
    verdict: block
    reason: r
`),
		layeredPolicy("b", policy.LayerBuiltin, false, `rules:
  - id: builtin-block
    priority: 500
    match: {tools: [Bash]}
    verdict: block
    reason: r
`),
	}
	_, set, ds := shadowFindings(t, srcs)
	require.Len(t, ds, 1, "one of the two always decides first")
	byPos := map[policy.Pos]*compile.Rule{}
	for _, r := range set.Rules() {
		byPos[r.Source.ID.Pos] = r
	}
	shadowed, by := byPos[ds[0].Pos], byPos[ds[0].Related[0]]
	require.NotNil(t, shadowed)
	require.NotNil(t, by)
	cands := set.Candidates(policy.PhaseBefore, "Bash")
	assert.Less(t, slices.Index(cands, by), slices.Index(cands, shadowed), "the pre-empting rule comes first in Candidates")
	assert.Equal(t, policy.CodeCrossLayerShadowed, ds[0].Code)
	assert.Equal(t, cands[0], by)
}

// TestRelaxations: the rules of an untrusted source that, trusted, would
// decide before a stricter rule of a trusted source for some tool.
func TestRelaxations(t *testing.T) {
	const (
		builtin = policy.LayerBuiltin
		user    = policy.LayerUser
		project = policy.LayerProject
	)
	tests := []struct {
		name string
		srcs []policy.Source
		want []string
	}{
		{"nothing untrusted", []policy.Source{
			layeredPolicy("p", project, false, allowAll),
			layeredPolicy("u", user, false, blockBash),
		}, nil},
		{"an untrusted allow-everything over the user's block and the built-in warning", []policy.Source{
			layeredPolicy("p", project, true, allowAll),
			layeredPolicy("u", user, false, blockBash),
			layeredPolicy("b", builtin, false, warnBash),
		}, []string{"p.yaml:5:9 u.yaml:5:9 b.yaml:5:9"}},
		{"no tool in common", []policy.Source{
			layeredPolicy("p", project, true, `rules:
  - id: allow-read
    priority: 1000
    match: {tools: [Read]}
    verdict: allow
`),
			layeredPolicy("u", user, false, blockBash),
		}, nil},
		{"a glob reaches the names it admits", []policy.Source{
			layeredPolicy("p", project, true, `rules:
  - id: allow-mcp
    priority: 1000
    match: {tools: ["mcp__*"]}
    verdict: allow
`),
			layeredPolicy("u", user, false, `rules:
  - id: block-fs
    match: {tools: [mcp__fs_write]}
    verdict: block
    reason: r
  - id: block-bash
    match: {tools: [Bash]}
    verdict: block
    reason: r
`),
		}, []string{"p.yaml:5:9 u.yaml:5:9"}},
		{"a stricter untrusted rule relaxes nothing", []policy.Source{
			layeredPolicy("p", project, true, `rules:
  - id: halt-all
    priority: 1000
    verdict: halt
    reason: r
`),
			layeredPolicy("u", user, false, blockBash),
		}, nil},
		{"an untrusted warning before a trusted ask", []policy.Source{
			layeredPolicy("p", project, true, `rules:
  - id: warn-bash
    priority: 1000
    match: {tools: [Bash]}
    verdict: warn
    reason: r
`),
			layeredPolicy("u", user, false, `rules:
  - id: ask-bash
    match: {tools: [Bash]}
    condition: 'tool == "Bash"'
    verdict: ask
    reason: r
`),
		}, []string{"p.yaml:5:9 u.yaml:5:9"}},
		{"an untrusted modify goes on to the other rules", []policy.Source{
			layeredPolicy("p", project, true, `rules:
  - id: rewrite
    priority: 1000
    verdict: modify
    modify: {set: {command: '"ls"'}}
`),
			layeredPolicy("u", user, false, blockBash),
		}, nil},
		{"a trusted rule tried first is not relaxed", []policy.Source{
			layeredPolicy("p", project, true, `rules:
  - id: allow-bash
    priority: 1
    match: {tools: [Bash]}
    verdict: allow
`),
			layeredPolicy("e", policy.LayerExplicit, false, `rules:
  - id: block-bash
    priority: 100
    match: {tools: [Bash]}
    verdict: block
    reason: r
`),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := compile.Relaxations(tt.srcs)
			require.NoError(t, err)
			var got []string
			for _, d := range ds {
				assert.Equal(t, policy.CodeUntrustedWouldRelax, d.Code)
				assert.Equal(t, policy.SeverityInfo, d.Severity)
				s := d.Pos.String()
				for _, r := range d.Related {
					s += " " + r.String()
				}
				got = append(got, s)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestRelaxationsMessage names the rules pre-empted, three at most.
func TestRelaxationsMessage(t *testing.T) {
	var body string
	for i := range 5 {
		body += fmt.Sprintf("  - id: block-%d\n    match: {tools: [Bash]}\n    condition: 'tool == \"x%d\"'\n    verdict: block\n    reason: r\n", i, i)
	}
	ds, err := compile.Relaxations([]policy.Source{
		layeredPolicy("p", policy.LayerProject, true, allowAll),
		layeredPolicy("u", policy.LayerUser, false, "rules:\n"+body),
	})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Len(t, ds[0].Related, 5)
	assert.Equal(t, `untrusted rule "allow-all" (allow) only restricts today; once its project is trusted (celguard trust), it is tried before "block-0" (user layer, u.yaml:5:9, verdict block), "block-1" (user layer, u.yaml:10:9, verdict block), "block-2" (user layer, u.yaml:15:9, verdict block) and 2 more and decides in their place whenever its condition holds`, ds[0].Message)
}

// TestRelaxationsOfSourcesThatDoNotCompile: the error is Compile's.
func TestRelaxationsOfSourcesThatDoNotCompile(t *testing.T) {
	_, err := compile.Relaxations([]policy.Source{layeredPolicy("p", policy.LayerProject, true, "rules:\n  - id: x\n    verdict: nope\n")})
	var ds policy.Diagnostics
	require.ErrorAs(t, err, &ds)
}
