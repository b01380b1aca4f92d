package compile_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

func layerSrc(name string, layer policy.Layer, body string) policy.Source {
	return policy.Source{Name: name, Layer: layer, Data: []byte("apiVersion: celguard.dev/v1\n" + body)}
}

func ruleIDs(set *compile.PolicySet) []string {
	var ids []string
	for _, r := range set.Rules() {
		ids = append(ids, r.Policy.Name+"/"+r.ID+"@"+r.Policy.Layer.String())
	}
	return ids
}

func TestLayering(t *testing.T) {
	builtin := layerSrc("builtin/risky.yaml", policy.LayerBuiltin, `kind: Policy
name: risky
rules:
  - {id: ask-sudo, verdict: ask, reason: sudo}
  - {id: ask-docker, verdict: ask, reason: docker}
`)
	builtinOther := layerSrc("builtin/other.yaml", policy.LayerBuiltin, `kind: Policy
name: other
rules:
  - {id: shared-id, verdict: block, reason: builtin}
  - {id: keep-me, verdict: warn, reason: kept}
`)
	for _, tc := range []struct {
		name      string
		srcs      []policy.Source
		want      []string
		excluded  []string
		wantCodes []policy.Code
	}{{
		name: "a higher layer's policy replaces the lower one of the same name",
		srcs: []policy.Source{builtin, builtinOther, layerSrc(".celguard/risky.yaml", policy.LayerProject, `kind: Policy
name: risky
rules:
  - {id: ask-sudo-project, verdict: block, reason: never sudo}
`)},
		want:     []string{"other/shared-id@builtin", "other/keep-me@builtin", "risky/ask-sudo-project@project"},
		excluded: []string{"policy risky@builtin"},
	}, {
		name: "a rule id redefined in a higher layer is kept from the higher one",
		srcs: []policy.Source{builtin, builtinOther, layerSrc("mine.yaml", policy.LayerExplicit, `kind: Policy
name: mine
rules:
  - {id: shared-id, verdict: allow}
`)},
		want:     []string{"risky/ask-sudo@builtin", "risky/ask-docker@builtin", "other/keep-me@builtin", "mine/shared-id@explicit"},
		excluded: []string{"rule shared-id@builtin"},
	}, {
		name: "an Overrides file disables lower-layer policies and rules by name",
		srcs: []policy.Source{builtin, builtinOther, layerSrc("user/off.yaml", policy.LayerUser, `kind: Overrides
name: user-off
disable:
  policies: [other]
  rules: [ask-docker]
`)},
		want:     []string{"risky/ask-sudo@builtin"},
		excluded: []string{"policy other@builtin", "rule ask-docker@builtin"},
	}, {
		name: "an Overrides file cannot disable its own or a higher layer, and warns on names it does not find",
		srcs: []policy.Source{layerSrc(".celguard/p.yaml", policy.LayerProject, `kind: Policy
name: proj
rules:
  - {id: proj-rule, verdict: block, reason: x}
`), layerSrc("user/off.yaml", policy.LayerUser, `kind: Overrides
name: user-off
disable:
  policies: [proj]
  rules: [proj-rule, no-such-rule]
`)},
		want:      []string{"proj/proj-rule@project"},
		wantCodes: []policy.Code{policy.CodeUnknownOverride, policy.CodeUnknownOverride, policy.CodeUnknownOverride},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			set, ds, err := compile.Check(tc.srcs)
			require.NoError(t, err)
			require.NotNil(t, set, "%v", ds)
			assert.ElementsMatch(t, tc.want, ruleIDs(set))
			var excl []string
			for _, e := range set.Exclusions() {
				excl = append(excl, e.Kind+" "+e.Name+"@"+e.Layer.String())
			}
			assert.ElementsMatch(t, tc.excluded, excl)
			var codes []policy.Code
			for _, d := range ds {
				if d.Code == policy.CodeUnknownOverride || d.Severity == policy.SeverityError {
					codes = append(codes, d.Code)
				}
			}
			assert.ElementsMatch(t, tc.wantCodes, codes)
		})
	}
}

func TestSameLayerCollisionsStayErrors(t *testing.T) {
	_, err := compile.Compile([]policy.Source{
		layerSrc("a.yaml", policy.LayerProject, "kind: Policy\nname: p\nrules:\n  - {id: r, verdict: allow}\n"),
		layerSrc("b.yaml", policy.LayerProject, "kind: Policy\nname: p\nrules:\n  - {id: s, verdict: allow}\n"),
		layerSrc("c.yaml", policy.LayerProject, "kind: Policy\nname: q\nrules:\n  - {id: r, verdict: allow}\n"),
	})
	var ds policy.Diagnostics
	require.ErrorAs(t, err, &ds)
	var codes []policy.Code
	for _, d := range ds.Errors() {
		codes = append(codes, d.Code)
	}
	assert.ElementsMatch(t, []policy.Code{policy.CodeDuplicatePolicy, policy.CodeDuplicateRuleID}, codes)
}

// Exclusions are in file order: by file, then line and column as numbers
// (line 9 before line 11, which sorting the text "p.yaml:11:9" would not do).
func TestExclusionsInFileOrder(t *testing.T) {
	pol := "kind: Policy\nname: p\nrules:\n"
	for i := 5; i <= 12; i++ {
		pol += fmt.Sprintf("  - {id: r%d, verdict: warn, reason: x}\n", i)
	}
	set, ds, err := compile.Check([]policy.Source{
		layerSrc("builtin/p.yaml", policy.LayerBuiltin, pol),
		layerSrc("user/off.yaml", policy.LayerUser, "kind: Overrides\nname: off\ndisable:\n  rules: [r11, r9, r10]\n"),
	})
	require.NoError(t, err)
	require.NotNil(t, set, "%v", ds)
	var lines []int
	for _, e := range set.Exclusions() {
		lines = append(lines, e.Pos.Line)
	}
	assert.Equal(t, []int{9, 10, 11}, lines)
}
