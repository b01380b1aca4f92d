package compile_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

func untrustedSrc(name, body string) policy.Source {
	s := layerSrc(name, policy.LayerProject, body)
	s.Untrusted = true
	return s
}

// dangerous is a mandatory built-in policy with a mandatory rule and a rule
// that opts out.
var dangerous = layerSrc("builtin/dangerous.yaml", policy.LayerBuiltin, `kind: Policy
name: dangerous
enforcement: mandatory
rules:
  - {id: block-rm, priority: 1, verdict: block, reason: rm}
  - {id: soft, verdict: allow, enforcement: default}
`)

func TestMandatoryAndUntrustedLayering(t *testing.T) {
	for _, tc := range []struct {
		name string
		srcs []policy.Source
		want []string
		// excluded are "kind name@layer code"
		excluded []string
		// warnings are "code@file:line"
		warnings []string
	}{{
		name:     "a same-name policy of a higher layer does not replace a mandatory one",
		srcs:     []policy.Source{dangerous, layerSrc("user/d.yaml", policy.LayerUser, "kind: Policy\nname: dangerous\nrules:\n  - {id: allow-all, verdict: allow}\n")},
		want:     []string{"dangerous/block-rm@builtin", "dangerous/soft@builtin"},
		excluded: []string{"policy dangerous@user mandatory_kept"},
		warnings: []string{"mandatory_kept@user/d.yaml:3"},
	}, {
		name: "a same-id rule of another layer does not replace a mandatory rule; a default rule is replaced",
		srcs: []policy.Source{dangerous, layerSrc("x.yaml", policy.LayerExplicit,
			"kind: Policy\nname: mine\nrules:\n  - {id: block-rm, verdict: allow}\n  - {id: soft, verdict: warn, reason: w}\n")},
		want:     []string{"dangerous/block-rm@builtin", "mine/soft@explicit"},
		excluded: []string{"rule block-rm@explicit mandatory_kept", "rule soft@builtin overridden"},
		warnings: []string{"mandatory_kept@x.yaml:5"},
	}, {
		name:     "an Overrides file cannot disable a mandatory policy: its default rules go, its mandatory rules stay",
		srcs:     []policy.Source{dangerous, layerSrc("user/off.yaml", policy.LayerUser, "kind: Overrides\nname: off\ndisable:\n  policies: [dangerous]\n")},
		want:     []string{"dangerous/block-rm@builtin"},
		excluded: []string{"rule soft@builtin overridden"},
		warnings: []string{"mandatory_kept@user/off.yaml:5"},
	}, {
		name:     "an Overrides file cannot disable a mandatory rule",
		srcs:     []policy.Source{dangerous, layerSrc("user/off.yaml", policy.LayerUser, "kind: Overrides\nname: off\ndisable:\n  rules: [block-rm]\n")},
		want:     []string{"dangerous/block-rm@builtin", "dangerous/soft@builtin"},
		warnings: []string{"mandatory_kept@user/off.yaml:5"},
	}, {
		name:     "an admin policy is mandatory unless it says otherwise; a higher-layer copy of a mandatory one is refused",
		srcs:     []policy.Source{dangerous, layerSrc("/etc/celguard/d.yaml", policy.LayerAdmin, "kind: Policy\nname: dangerous\nrules:\n  - {id: admin-rm, verdict: block, reason: r}\n")},
		want:     []string{"dangerous/block-rm@builtin", "dangerous/soft@builtin"},
		excluded: []string{"policy dangerous@admin mandatory_kept"},
		warnings: []string{"mandatory_kept@/etc/celguard/d.yaml:3"},
	}, {
		name: "an untrusted Overrides file is ignored, whole",
		srcs: []policy.Source{dangerous, layerSrc("builtin/r.yaml", policy.LayerBuiltin, "kind: Policy\nname: risky\nrules:\n  - {id: ask-sudo, verdict: ask, reason: s}\n"),
			untrustedSrc(".celguard/off.yaml", "kind: Overrides\nname: off\ndisable:\n  policies: [risky, dangerous]\n  rules: [ask-sudo]\n")},
		want:     []string{"dangerous/block-rm@builtin", "dangerous/soft@builtin", "risky/ask-sudo@builtin"},
		excluded: []string{"overrides off@project untrusted_ignored"},
		warnings: []string{"untrusted_ignored@.celguard/off.yaml:1"},
	}, {
		name: "an untrusted policy or rule that would replace a lower layer's is left out; its other rules stay",
		srcs: []policy.Source{dangerous, layerSrc("builtin/r.yaml", policy.LayerBuiltin, "kind: Policy\nname: risky\nrules:\n  - {id: ask-sudo, verdict: ask, reason: s}\n"),
			untrustedSrc(".celguard/r.yaml", "kind: Policy\nname: risky\nrules:\n  - {id: allow-all, verdict: allow}\n"),
			untrustedSrc(".celguard/s.yaml", "kind: Policy\nname: repo\nrules:\n  - {id: ask-sudo, verdict: allow}\n  - {id: block-x, verdict: block, reason: x}\n")},
		want:     []string{"dangerous/block-rm@builtin", "dangerous/soft@builtin", "risky/ask-sudo@builtin", "repo/block-x@project"},
		excluded: []string{"policy risky@project untrusted_ignored", "rule ask-sudo@project untrusted_ignored"},
		warnings: []string{"untrusted_ignored@.celguard/r.yaml:3", "untrusted_ignored@.celguard/s.yaml:5"},
	}, {
		name: "an untrusted policy replaced by a higher layer is an ordinary exclusion; untrusted mandatory protects nothing",
		srcs: []policy.Source{layerSrc("x.yaml", policy.LayerExplicit, "kind: Policy\nname: repo\nrules:\n  - {id: x1, verdict: block, reason: x}\n"),
			untrustedSrc(".celguard/r.yaml", "kind: Policy\nname: repo\nenforcement: mandatory\nrules:\n  - {id: r1, verdict: warn, reason: w}\n")},
		want:     []string{"repo/x1@explicit"},
		excluded: []string{"policy repo@project overridden"},
	}, {
		name: "an untrusted tool class may add a class of tools, not extend a trusted one nor name arguments",
		srcs: []policy.Source{layerSrc("builtin/classes.yaml", policy.LayerBuiltin, "kind: ToolClasses\nname: c\nclasses:\n  - {name: read_only, tools: [Read]}\n"),
			untrustedSrc(".celguard/classes.yaml", "kind: ToolClasses\nname: mine\nclasses:\n  - {name: read_only, tools: [Bash]}\n  - {name: deploy, tools: [Deploy]}\n  - {name: myshell, tools: [Sh], command_args: [description]}\n"),
			untrustedSrc(".celguard/p.yaml", "kind: Policy\nname: repo\nrules:\n  - {id: no-deploy, match: {classes: [deploy]}, verdict: block, reason: d}\n")},
		want:     []string{"repo/no-deploy@project"},
		excluded: []string{"class read_only@project untrusted_ignored", "class myshell@project untrusted_ignored"},
		warnings: []string{"untrusted_ignored@.celguard/classes.yaml:5", "untrusted_ignored@.celguard/classes.yaml:7"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			set, ds, err := compile.Check(tc.srcs)
			require.NoError(t, err)
			require.NotNil(t, set, "%v", ds)
			assert.ElementsMatch(t, tc.want, ruleIDs(set))
			var excl []string
			for _, e := range set.Exclusions() {
				excl = append(excl, e.Kind+" "+e.Name+"@"+e.Layer.String()+" "+string(e.Code))
			}
			assert.ElementsMatch(t, tc.excluded, excl)
			var warns []string
			for _, d := range ds {
				if d.Code == policy.CodeMandatoryKept || d.Code == policy.CodeUntrustedIgnored {
					warns = append(warns, string(d.Code)+"@"+d.Pos.File+":"+strconv.Itoa(d.Pos.Line))
					assert.Equal(t, policy.SeverityWarning, d.Severity)
					assert.NotEmpty(t, d.Related, "the message names both places: %s", d.Message)
					if d.Code == policy.CodeUntrustedIgnored {
						assert.Contains(t, d.Message, "run `celguard trust` in the project to let it")
					}
				}
			}
			assert.ElementsMatch(t, tc.warnings, warns, "%v", ds)
		})
	}
}

func TestInvalidMandatory(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		layer     policy.Layer
		line      int
		contains  string
	}{
		{name: "a mandatory allow rule", src: "kind: Policy\nname: p\nrules:\n  - id: a\n    enforcement: mandatory\n    verdict: allow\n",
			line: 7, contains: "remove enforcement: mandatory"},
		{name: "a modify rule of a mandatory policy, at the rule", src: "kind: Policy\nname: p\nenforcement: mandatory\nrules:\n  - id: m\n    verdict: modify\n    modify: {set: {a: '1'}}\n",
			line: 7, contains: "give the rule enforcement: default"},
		{name: "an allow rule of an admin policy", src: "kind: Policy\nname: p\nrules:\n  - id: a\n    verdict: allow\n",
			layer: policy.LayerAdmin, line: 6, contains: "admin-layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile.Compile([]policy.Source{layerSrc("p.yaml", tc.layer, tc.src)})
			var ds policy.Diagnostics
			require.ErrorAs(t, err, &ds)
			require.Len(t, ds.Errors(), 1, "%v", ds)
			d := ds.Errors()[0]
			assert.Equal(t, policy.CodeInvalidMandatory, d.Code)
			assert.Equal(t, tc.line, d.Pos.Line, d.Error())
			assert.Contains(t, d.Message, tc.contains)
		})
	}
	// Opting out, and every verdict that stops or flags a call, compile.
	_, err := compile.Compile([]policy.Source{layerSrc("p.yaml", policy.LayerAdmin, `kind: Policy
name: p
rules:
  - {id: a, verdict: allow, enforcement: default}
  - {id: b, verdict: block, reason: b}
  - {id: c, verdict: warn, reason: c}
  - {id: d, verdict: ask, reason: d}
  - {id: e, verdict: halt, reason: e}
`), layerSrc("q.yaml", policy.LayerAdmin, "kind: Policy\nname: q\nenforcement: default\nrules:\n  - {id: q, verdict: allow}\n")})
	require.NoError(t, err)
}

// TestEvaluationOrder pins the layer-major order: mandatory rules first by
// priority, then the others by layer, highest first, then by priority; the
// untrusted track last, apart.
func TestEvaluationOrder(t *testing.T) {
	set, err := compile.Compile([]policy.Source{
		layerSrc("builtin/b.yaml", policy.LayerBuiltin, `kind: Policy
name: b
rules:
  - {id: b-allow-1000, priority: 1000, verdict: allow}
  - {id: b-must-5, priority: 5, verdict: block, reason: r, enforcement: mandatory}
  - {id: b-ask-50, priority: 50, verdict: ask, reason: r}
`),
		layerSrc("user/u.yaml", policy.LayerUser, `kind: Policy
name: u
rules:
  - {id: u-block-1, priority: 1, verdict: block, reason: r}
  - {id: u-allow-2, priority: 2, verdict: allow}
`),
		layerSrc("/etc/celguard/a.yaml", policy.LayerAdmin, `kind: Policy
name: a
rules:
  - {id: a-must-1, priority: 1, verdict: block, reason: r}
  - {id: a-warn-9, priority: 9, verdict: warn, reason: r, enforcement: default}
`),
		untrustedSrc(".celguard/p.yaml", `kind: Policy
name: p
rules:
  - {id: p-allow-9999, priority: 9999, verdict: allow}
  - {id: p-block-0, verdict: block, reason: r}
`),
	})
	require.NoError(t, err)
	var ids []string
	for _, r := range set.Rules() {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"b-must-5", "a-must-1", "a-warn-9", "u-allow-2", "u-block-1", "b-allow-1000", "b-ask-50",
		"p-allow-9999", "p-block-0"}, ids)
	var cands []string
	for _, r := range set.Candidates(policy.PhaseBefore, "Bash") {
		cands = append(cands, r.ID)
	}
	assert.Equal(t, ids[:7], cands, "the trusted track")
	cands = nil
	for _, r := range set.UntrustedCandidates(policy.PhaseBefore, "Bash") {
		cands = append(cands, r.ID)
	}
	assert.Equal(t, ids[7:], cands, "the untrusted track")
	assert.True(t, set.HasUntrusted())
	r, _ := set.Rule("b-must-5")
	assert.True(t, r.Mandatory)
	r, _ = set.Rule("a-warn-9")
	assert.False(t, r.Mandatory)
}

func TestUntrustedDefaultVerdict(t *testing.T) {
	set, err := compile.Compile([]policy.Source{
		layerSrc("u.yaml", policy.LayerUser, "kind: Policy\nname: u\ndefaults: {verdict: warn}\nrules:\n  - {id: u, verdict: block, reason: r}\n"),
		untrustedSrc(".celguard/p.yaml", "kind: Policy\nname: p\ndefaults: {verdict: block}\nrules:\n  - {id: p, verdict: allow}\n"),
	})
	require.NoError(t, err, "an untrusted default does not conflict with the trusted one: it is its track's")
	assert.Equal(t, policy.Warn, set.DefaultVerdict())
	assert.Equal(t, policy.Block, set.UntrustedDefaultVerdict())
	set, err = compile.Compile([]policy.Source{layerSrc("u.yaml", policy.LayerUser, "kind: Policy\nname: u\nrules:\n  - {id: u, verdict: block, reason: r}\n")})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, set.UntrustedDefaultVerdict())
	assert.False(t, set.HasUntrusted())
}
