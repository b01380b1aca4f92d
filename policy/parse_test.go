package policy_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
)

const fullPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: full.policy-1
description: Every field.
defaults:
  failure_policy: open
  verdict: warn
variables:
  - name: cmd
    expression: 'has(args.command) ? string(args.command) : ""'
counters:
  - name: fails
    scope: session
    key: 'tool + ":" + canonical(args)'
    increment_when: 'result.is_error'
    reset_when: '!result.is_error'
    window: 90s
  - name: calls
    increment_when: 'true'
rules:
  - id: block-rm
    description: No rm.
    priority: -7
    phase: before
    match:
      tools: [Bash, "mcp__*", 42]
    condition: 'cmd.startsWith("rm")'
    verdict: block
    reason: Deleting is not allowed.
    message: '"refused: " + cmd'
    code: dangerous_command
    failure_policy: closed
  - id: clamp
    priority: 0x10
    verdict: modify
    modify:
      args: 'args'
      set: {timeout: '600000', mode: '"safe"'}
      unset: [force, verbose]
  - id: redact
    phase: after
    verdict: modify
    modify:
      content: '"[redacted]"'
  - id: bare
    verdict: halt
`

func TestParseFullPolicy(t *testing.T) {
	p, ds := policy.Parse("full.yaml", []byte(fullPolicy))
	require.Empty(t, ds, "got diagnostics %v, want none", ds)
	require.NotNil(t, p)

	pos := func(line, col int) policy.Pos { return policy.Pos{File: "full.yaml", Line: line, Col: col} }
	assert.Equal(t, "full.yaml", p.File)
	assert.Equal(t, pos(1, 1), p.Pos)
	assert.Equal(t, policy.String{Value: "full.policy-1", Pos: pos(3, 7)}, p.Name)
	assert.Equal(t, "Every field.", p.Description)
	assert.Equal(t, policy.Defaults{FailurePolicy: policy.FailOpen, Verdict: policy.Warn, VerdictPos: pos(7, 12)}, p.Defaults)

	require.Len(t, p.Variables, 1)
	assert.Equal(t, policy.String{Value: "cmd", Pos: pos(9, 11)}, p.Variables[0].Name)
	assert.Equal(t, `has(args.command) ? string(args.command) : ""`, p.Variables[0].Expr.Text)
	assert.Equal(t, pos(10, 18), p.Variables[0].Expr.Pos)

	require.Len(t, p.Counters, 2)
	c := p.Counters[0]
	assert.Equal(t, policy.String{Value: "fails", Pos: pos(12, 11)}, c.Name)
	assert.Equal(t, policy.ScopeSession, c.Scope)
	require.NotNil(t, c.Key)
	assert.Equal(t, `tool + ":" + canonical(args)`, c.Key.Text)
	assert.Equal(t, pos(14, 11), c.Key.Pos)
	assert.Equal(t, "result.is_error", c.IncrementWhen.Text)
	assert.Equal(t, pos(15, 22), c.IncrementWhen.Pos)
	require.NotNil(t, c.ResetWhen)
	assert.Equal(t, "!result.is_error", c.ResetWhen.Text)
	assert.Equal(t, 90*time.Second, c.Window)
	c = p.Counters[1]
	assert.Equal(t, policy.ScopeTurn, c.Scope, "scope defaults to turn")
	assert.Nil(t, c.Key, "no key means the tool name")
	assert.Nil(t, c.ResetWhen)
	assert.Zero(t, c.Window)

	require.Len(t, p.Rules, 4)
	r := p.Rules[0]
	assert.Equal(t, policy.String{Value: "block-rm", Pos: pos(21, 9)}, r.ID)
	assert.Equal(t, pos(21, 5), r.Pos)
	assert.Equal(t, "No rm.", r.Description)
	assert.Equal(t, -7, r.Priority)
	assert.Equal(t, policy.PhaseBefore, r.Phase)
	assert.Equal(t, []policy.String{{Value: "Bash", Pos: pos(26, 15)}, {Value: "mcp__*", Pos: pos(26, 21)}, {Value: "42", Pos: pos(26, 31)}}, r.Tools)
	require.NotNil(t, r.Condition)
	assert.Equal(t, `cmd.startsWith("rm")`, r.Condition.Text)
	assert.Equal(t, pos(27, 17), r.Condition.Pos)
	assert.Equal(t, policy.Block, r.Verdict)
	assert.Equal(t, pos(28, 14), r.VerdictPos)
	assert.Equal(t, "Deleting is not allowed.", r.Reason)
	require.NotNil(t, r.Message)
	assert.Equal(t, `"refused: " + cmd`, r.Message.Text)
	assert.Equal(t, "dangerous_command", r.Code)
	assert.Equal(t, policy.FailClosed, r.FailurePolicy)
	assert.Nil(t, r.Modify)

	r = p.Rules[1]
	assert.Equal(t, 16, r.Priority, "0x10")
	assert.Equal(t, policy.Modify, r.Verdict)
	assert.Equal(t, policy.FailInherit, r.FailurePolicy, "a rule without failure_policy inherits the policy's")
	assert.Empty(t, r.Tools, "no match means every tool")
	assert.Nil(t, r.Condition, "no condition means true")
	require.NotNil(t, r.Modify)
	assert.Equal(t, pos(37, 7), r.Modify.Pos)
	require.NotNil(t, r.Modify.Args)
	assert.Equal(t, "args", r.Modify.Args.Text)
	require.Len(t, r.Modify.Set, 2)
	assert.Equal(t, policy.String{Value: "timeout", Pos: pos(38, 13)}, r.Modify.Set[0].Key)
	assert.Equal(t, "600000", r.Modify.Set[0].Expr.Text)
	assert.Equal(t, pos(38, 23), r.Modify.Set[0].Expr.Pos)
	assert.Equal(t, "mode", r.Modify.Set[1].Key.Value)
	assert.Equal(t, `"safe"`, r.Modify.Set[1].Expr.Text)
	assert.Equal(t, []policy.String{{Value: "force", Pos: pos(39, 15)}, {Value: "verbose", Pos: pos(39, 22)}}, r.Modify.Unset)
	assert.Nil(t, r.Modify.Content)

	r = p.Rules[2]
	assert.Equal(t, policy.PhaseAfter, r.Phase)
	require.NotNil(t, r.Modify)
	require.NotNil(t, r.Modify.Content)
	assert.Equal(t, `"[redacted]"`, r.Modify.Content.Text)

	r = p.Rules[3]
	assert.Equal(t, policy.Halt, r.Verdict)
	assert.Zero(t, r.Priority, "priority defaults to 0")
	assert.Equal(t, policy.PhaseBefore, r.Phase, "phase defaults to before")
}

func TestParseDefaults(t *testing.T) {
	src := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: a\n    verdict: allow\n"
	p, ds := policy.Parse("p.yaml", []byte(src))
	require.Empty(t, ds)
	assert.Equal(t, policy.FailClosed, p.Defaults.FailurePolicy, "failure_policy defaults to closed")
	assert.Equal(t, policy.VerdictUnspecified, p.Defaults.Verdict, "no default verdict unless set")
	assert.True(t, p.Defaults.VerdictPos.IsZero())
	assert.Empty(t, p.Variables)
	assert.Empty(t, p.Counters)
	require.Len(t, p.Rules, 1)
	assert.Equal(t, policy.PhaseBefore, p.Rules[0].Phase)
	assert.Equal(t, policy.FailInherit, p.Rules[0].FailurePolicy)
}

func TestParseExample(t *testing.T) {
	// The example policy of the format's specification.
	src, err := os.ReadFile("testdata/example.yaml")
	require.NoError(t, err)
	p, ds := policy.Parse("example.yaml", src)
	require.Empty(t, ds, "got diagnostics %v, want none", ds)
	assert.Equal(t, "workspace-safety", p.Name.Value)
	assert.Equal(t, policy.FailClosed, p.Defaults.FailurePolicy)
	require.Len(t, p.Counters, 2)
	assert.Equal(t, policy.ScopeTurn, p.Counters[0].Scope)
	assert.Equal(t, policy.ScopeSession, p.Counters[1].Scope)
	assert.Equal(t, 60*time.Second, p.Counters[1].Window)
	require.Len(t, p.Rules, 3)
	assert.Equal(t, 900, p.Rules[0].Priority)
	assert.Equal(t, []string{"Bash", "run_shell_command", "mcp__*"}, values(p.Rules[0].Tools))
	assert.Equal(t, `cmd.matches("rm\\s+-[a-zA-Z]*r[a-zA-Z]*f?\\s+/(\\s|$)")`, p.Rules[0].Condition.Text)
	assert.Equal(t, policy.Modify, p.Rules[2].Verdict)
	require.Len(t, p.Rules[2].Modify.Set, 1)
	assert.Equal(t, "timeout", p.Rules[2].Modify.Set[0].Key.Value)
}

func values(ss []policy.String) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Value
	}
	return out
}

func TestParseNotAPolicy(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantNil  bool
		wantCode policy.Code
		wantPos  policy.Pos
	}{
		{"empty", "", true, policy.CodeMissingField, policy.Pos{File: "p.yaml", Line: 1, Col: 1}},
		{"comment only", "# x\n", true, policy.CodeMissingField, policy.Pos{File: "p.yaml", Line: 1, Col: 1}},
		{"not yaml, at the end of the last line", "{", true, policy.CodeYAMLSyntax, policy.Pos{File: "p.yaml", Line: 1, Col: 1}},
		{"not yaml", "a: [\n", true, policy.CodeYAMLSyntax, policy.Pos{File: "p.yaml", Line: 2, Col: 1}},
		{"parser error line", "a: 1\nb: [1, 2\nc: 3\n", true, policy.CodeYAMLSyntax, policy.Pos{File: "p.yaml", Line: 2, Col: 1}},
		{"scanner error line", "a: 1\nb: 2\n  c: 3\n", true, policy.CodeYAMLSyntax, policy.Pos{File: "p.yaml", Line: 3, Col: 1}},
		{"two documents", "a: 1\n---\nb: 2\n", true, policy.CodeYAMLSyntax, policy.Pos{File: "p.yaml", Line: 2, Col: 1}},
		{"a scalar", "hello\n", false, policy.CodeWrongType, policy.Pos{File: "p.yaml", Line: 1, Col: 1}},
		{"a list", "- a\n", false, policy.CodeWrongType, policy.Pos{File: "p.yaml", Line: 1, Col: 1}},
		{"too large", string(make([]byte, policy.MaxFileSize+1)), true, policy.CodeInvalidValue, policy.Pos{File: "p.yaml", Line: 1, Col: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := policy.Parse("p.yaml", []byte(tt.src))
			assert.Equal(t, tt.wantNil, p == nil, "got policy %v", p)
			require.NotEmpty(t, ds)
			assert.Equal(t, tt.wantCode, ds[0].Code, "got %v", ds)
			assert.Equal(t, tt.wantPos, ds[0].Pos, "got %v", ds)
			assert.True(t, ds.HasErrors())
		})
	}
}

func TestParseDuplicateKeys(t *testing.T) {
	src := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n" +
		"  - id: a\n    verdict: block\n    verdict: allow\n" +
		"  - id: b\n    verdict: modify\n    modify:\n      set: {x: '1', x: '2'}\n"
	p, ds := policy.Parse("p.yaml", []byte(src))
	require.NotNil(t, p)
	require.Len(t, ds, 2, "got %v", ds)
	assert.Equal(t, policy.CodeYAMLSyntax, ds[0].Code)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 7, Col: 5}, ds[0].Pos)
	assert.Equal(t, []policy.Pos{{File: "p.yaml", Line: 6, Col: 5}}, ds[0].Related)
	assert.Equal(t, policy.Block, p.Rules[0].Verdict, "the first value is kept")
	assert.Equal(t, policy.CodeYAMLSyntax, ds[1].Code)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 11, Col: 21}, ds[1].Pos)
	require.Len(t, p.Rules[1].Modify.Set, 1)
}

func TestParseAliases(t *testing.T) {
	// Anchors and aliases are followed; positions are those of the anchored
	// node, after its anchor and tag.
	src := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n" +
		"  - id: a\n    condition: &c 'tool == \"Bash\"'\n    verdict: block\n" +
		"  - id: b\n    condition: *c\n    verdict: warn\n" +
		"  - id: c\n    condition: !!str &d\n      tool == TARGET\n    verdict: warn\n"
	p, ds := policy.Parse("p.yaml", []byte(src))
	require.Empty(t, ds)
	require.Len(t, p.Rules, 3)
	assert.Equal(t, p.Rules[0].Condition.Text, p.Rules[1].Condition.Text)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 6, Col: 20}, p.Rules[0].Condition.Pos)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 6, Col: 28}, p.Rules[1].Condition.PosOffset(8), "the B of Bash")
	e := p.Rules[2].Condition
	assert.Equal(t, "tool == TARGET", e.Text)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 13, Col: 15}, e.PosAt(1, 8))
}

func TestParseDiagnosticsAreSorted(t *testing.T) {
	src := "kind: Nope\nextra: 1\napiVersion: x\nname: '-'\nrules: [{id: a, verdict: nope, phase: never}]\n"
	_, ds := policy.Parse("p.yaml", []byte(src))
	require.NotEmpty(t, ds)
	for i := 1; i < len(ds); i++ {
		assert.LessOrEqual(t, ds[i-1].Pos.Compare(ds[i].Pos), 0, "diagnostics out of order: %v", ds)
	}
	for _, d := range ds {
		assert.Equal(t, policy.SeverityError, d.Severity)
		assert.Equal(t, "p.yaml", d.Pos.File)
	}
}

func TestParseAliasBomb(t *testing.T) {
	// Nine levels of nine aliases: 9^10 nodes once expanded, from a file of
	// under 600 bytes. Parse must not expand them all.
	var b strings.Builder
	b.WriteString("apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules: []\n")
	b.WriteString("x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	done := make(chan policy.Diagnostics, 1)
	go func() {
		_, ds := policy.Parse("p.yaml", []byte(b.String()))
		done <- ds
	}()
	select {
	case ds := <-done:
		require.Len(t, ds, 10, "got %v", ds)
		assert.Equal(t, policy.CodeUnknownField, ds[0].Code)
	case <-time.After(10 * time.Second):
		t.Fatal("Parse of an alias bomb did not return within 10s")
	}
}

func TestParseEnforcement(t *testing.T) {
	const head = "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\n"
	for _, tc := range []struct {
		name, src          string
		policy, rule       policy.Enforcement
		policySet, ruleSet bool
		wantCode           policy.Code
	}{
		{name: "absent everywhere is the default, unset", src: head + "rules:\n  - {id: a, verdict: block}\n"},
		{name: "on the policy", src: head + "enforcement: mandatory\nrules:\n  - {id: a, verdict: block}\n",
			policy: policy.EnforcementMandatory, policySet: true},
		{name: "on the rule, overriding the policy", src: head + "enforcement: mandatory\nrules:\n  - {id: a, verdict: allow, enforcement: default}\n",
			policy: policy.EnforcementMandatory, policySet: true, rule: policy.EnforcementDefault, ruleSet: true},
		{name: "a typo is an error, not a silent default", src: head + "rules:\n  - {id: a, verdict: block, enforcement: mandatroy}\n",
			ruleSet: true, wantCode: policy.CodeInvalidValue},
		{name: "not a string", src: head + "enforcement: [mandatory]\nrules:\n  - {id: a, verdict: block}\n",
			policySet: true, wantCode: policy.CodeWrongType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := policy.Parse("p.yaml", []byte(tc.src))
			if tc.wantCode == "" {
				require.Empty(t, ds)
			} else {
				require.NotEmpty(t, ds)
				assert.Equal(t, tc.wantCode, ds[0].Code, ds.Error())
			}
			assert.Equal(t, tc.policy, p.Enforcement)
			assert.Equal(t, tc.policySet, !p.EnforcementPos.IsZero())
			require.Len(t, p.Rules, 1)
			assert.Equal(t, tc.rule, p.Rules[0].Enforcement)
			assert.Equal(t, tc.ruleSet, !p.Rules[0].EnforcementPos.IsZero())
		})
	}
}

// TestParseCounterScopes: a counter's scope and on_store_error, every
// value, and a positioned error for any other.
func TestParseCounterScopes(t *testing.T) {
	const head = "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\ncounters:\n  - name: c\n    increment_when: 'true'\n"
	for _, tc := range []struct {
		name, src string
		scope     policy.Scope
		onErr     policy.StoreErrorPolicy
		wantCode  policy.Code
		wantPos   policy.Pos
		wantMsg   string
	}{
		{name: "default", src: head, scope: policy.ScopeTurn},
		{name: "turn", src: head + "    scope: turn\n", scope: policy.ScopeTurn},
		{name: "session", src: head + "    scope: session\n", scope: policy.ScopeSession},
		{name: "agent", src: head + "    scope: agent\n", scope: policy.ScopeAgent},
		{name: "repository", src: head + "    scope: repository\n", scope: policy.ScopeRepository},
		{name: "org", src: head + "    scope: org\n", scope: policy.ScopeOrg},
		{name: "a typo", src: head + "    scope: repo\n", wantCode: policy.CodeInvalidValue,
			wantPos: policy.Pos{File: "p.yaml", Line: 7, Col: 12}, wantMsg: `scope must be turn, session, agent, repository or org, not "repo"`},
		{name: "not a string", src: head + "    scope: [org]\n", wantCode: policy.CodeWrongType},
		{name: "on_store_error local", src: head + "    scope: org\n    on_store_error: local\n", scope: policy.ScopeOrg, onErr: policy.StoreErrorLocal},
		{name: "on_store_error close", src: head + "    on_store_error: close\n", onErr: policy.StoreErrorClose},
		{name: "on_store_error typo", src: head + "    on_store_error: open\n", wantCode: policy.CodeInvalidValue,
			wantPos: policy.Pos{File: "p.yaml", Line: 7, Col: 21}, wantMsg: `on_store_error must be close or local, not "open"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := policy.Parse("p.yaml", []byte(tc.src+"rules:\n  - {id: a, verdict: block}\n"))
			require.NotNil(t, p)
			if tc.wantCode == "" {
				require.Empty(t, ds)
				require.Len(t, p.Counters, 1)
				assert.Equal(t, tc.scope, p.Counters[0].Scope)
				assert.Equal(t, tc.onErr, p.Counters[0].OnStoreError)
				return
			}
			require.NotEmpty(t, ds)
			assert.Equal(t, tc.wantCode, ds[0].Code, ds.Error())
			if tc.wantMsg != "" {
				assert.Equal(t, tc.wantPos, ds[0].Pos)
				assert.Equal(t, tc.wantMsg, ds[0].Message)
			}
		})
	}
	for _, sc := range []policy.Scope{policy.ScopeTurn, policy.ScopeSession, policy.ScopeAgent, policy.ScopeRepository, policy.ScopeOrg} {
		got, err := policy.ParseScope(sc.String())
		require.NoError(t, err)
		assert.Equal(t, sc, got)
		assert.Equal(t, sc >= policy.ScopeAgent, sc.Shared(), sc.String())
	}
	assert.Equal(t, "local", policy.StoreErrorLocal.String())
	assert.Equal(t, "close", policy.StoreErrorClose.String())
}

// TestParseRuleLabels: a rule's labels: {add: [...]}, and a positioned
// error for each way it can be wrong.
func TestParseRuleLabels(t *testing.T) {
	const head = "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: r\n"
	for _, tc := range []struct {
		name, src string
		labels    []string
		wantCode  policy.Code
		wantLine  int
		wantMsg   string
	}{
		{name: "allow", src: "    verdict: allow\n    labels: {add: [secret_read, b]}\n", labels: []string{"secret_read", "b"}},
		{name: "ask", src: "    verdict: ask\n    labels: {add: [x]}\n", labels: []string{"x"}},
		{name: "after warn", src: "    phase: after\n    verdict: warn\n    labels: {add: [x]}\n", labels: []string{"x"}},
		{name: "block", src: "    verdict: block\n    labels: {add: [x]}\n", wantCode: policy.CodeInvalidValue, wantLine: 7,
			wantMsg: "labels are added when the rule lets the call run or asks (allow, warn or ask), and this rule's verdict is block: the call it refuses never runs"},
		{name: "turn end", src: "    phase: turn_end\n    verdict: warn\n    labels: {add: [x]}\n", wantCode: policy.CodeInvalidValue, wantLine: 8,
			wantMsg: "labels are added by a rule that decides a call (phase before or after) or a resource read (phase resource), not in phase turn_end"},
		{name: "not an identifier", src: "    verdict: allow\n    labels: {add: [a-b]}\n", wantCode: policy.CodeInvalidID, wantLine: 7},
		{name: "too long", src: "    verdict: allow\n    labels: {add: [" + strings.Repeat("x", 65) + "]}\n", wantCode: policy.CodeInvalidValue, wantLine: 7},
		{name: "no add", src: "    verdict: allow\n    labels: {}\n", wantCode: policy.CodeMissingField, wantLine: 7},
		{name: "unknown field", src: "    verdict: allow\n    labels: {remove: [x]}\n", wantCode: policy.CodeUnknownField, wantLine: 7},
		{name: "not a list", src: "    verdict: allow\n    labels: {add: x}\n", wantCode: policy.CodeWrongType, wantLine: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := policy.Parse("p.yaml", []byte(head+tc.src))
			require.NotNil(t, p)
			if tc.wantCode == "" {
				require.Empty(t, ds)
				var got []string
				for _, l := range p.Rules[0].Labels {
					got = append(got, l.Value)
				}
				assert.Equal(t, tc.labels, got)
				return
			}
			i := slices.IndexFunc(ds, func(d policy.Diagnostic) bool { return d.Code == tc.wantCode })
			require.GreaterOrEqual(t, i, 0, "no %s in %v", tc.wantCode, ds)
			assert.Equal(t, tc.wantLine, ds[i].Pos.Line, ds[i].Message)
			if tc.wantMsg != "" {
				assert.Equal(t, tc.wantMsg, ds[i].Message)
			}
		})
	}
}

// TestParseCounterResetAll: reset: all or key, and positioned errors for
// another value and for reset without reset_when.
func TestParseCounterResetAll(t *testing.T) {
	const head = "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\ncounters:\n  - name: c\n    increment_when: 'true'\n"
	const rules = "rules:\n  - {id: a, verdict: block}\n"
	p, ds := policy.Parse("p.yaml", []byte(head+"    reset_when: 'false'\n    reset: all\n"+rules))
	require.Empty(t, ds)
	assert.True(t, p.Counters[0].ResetAll)
	p, ds = policy.Parse("p.yaml", []byte(head+"    reset_when: 'false'\n    reset: key\n"+rules))
	require.Empty(t, ds)
	assert.False(t, p.Counters[0].ResetAll)
	_, ds = policy.Parse("p.yaml", []byte(head+"    reset_when: 'false'\n    reset: every\n"+rules))
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeInvalidValue, ds[0].Code)
	assert.Equal(t, 8, ds[0].Pos.Line)
	_, ds = policy.Parse("p.yaml", []byte(head+"    reset: all\n"+rules))
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeMissingField, ds[0].Code)
	assert.Equal(t, 7, ds[0].Pos.Line)
}

// TestParseCounterWeight: weight is an expression, and cannot
// combine with a window or a streak.
func TestParseCounterWeight(t *testing.T) {
	const head = "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\ncounters:\n  - name: c\n    increment_when: 'true'\n    weight: 'int(args.n)'\n"
	const rules = "rules:\n  - {id: a, verdict: block}\n"
	p, ds := policy.Parse("p.yaml", []byte(head+rules))
	require.Empty(t, ds)
	require.NotNil(t, p.Counters[0].Weight)
	for _, extra := range []string{"    window: 60s\n", "    streak: 'tool'\n"} {
		_, ds = policy.Parse("p.yaml", []byte(head+extra+rules))
		require.Len(t, ds, 1, extra)
		assert.Equal(t, policy.CodeInvalidValue, ds[0].Code)
		assert.Equal(t, 7, ds[0].Pos.Line)
	}
}
