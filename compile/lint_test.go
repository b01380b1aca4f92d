package compile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// lintCodes are the warning codes of compile/lint.go.
var lintCodes = []policy.Code{
	policy.CodeShadowedRule, policy.CodeFalseCondition, policy.CodeUnusedVariable, policy.CodeUnusedCounter,
	policy.CodeCounterNeverIncremented, policy.CodeMissingReason, policy.CodeCostOverBudget,
	policy.CodeDuplicateCondition, policy.CodeInvalidSuppression, policy.CodeUnguardedArgument,
}

// lintPolicy wraps a policy body (variables, counters, rules) in a header.
func lintPolicy(name, body string) policy.Source {
	return policy.Source{Name: name + ".yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: " + name + "\n" + body)}
}

// lintFindings checks the sources and returns the lint warnings, rendered
// as "code file:line:col [related...]", in order, but unguarded_argument:
// the fixtures of the other analyses read args freely.
func lintFindings(t *testing.T, srcs []policy.Source, opts ...compile.Option) []string {
	t.Helper()
	var out []string
	for _, f := range lintFindingsAll(t, srcs, opts...) {
		if !strings.HasPrefix(f, string(policy.CodeUnguardedArgument)+" ") {
			out = append(out, f)
		}
	}
	return out
}

// lintFindingsAll is lintFindings with every lint warning.
func lintFindingsAll(t *testing.T, srcs []policy.Source, opts ...compile.Option) []string {
	t.Helper()
	_, ds, err := compile.Check(append(slices.Clone(srcs), policies.ToolClasses()), opts...)
	require.NoError(t, err)
	require.False(t, ds.HasErrors(), "the fixture must compile:\n%v", ds)
	var out []string
	for _, d := range ds {
		require.Contains(t, lintCodes, d.Code, "unexpected diagnostic %v", d)
		assert.Equal(t, policy.SeverityWarning, d.Severity, "%v", d)
		s := fmt.Sprintf("%s %s", d.Code, d.Pos)
		for _, r := range d.Related {
			s += " " + r.String()
		}
		out = append(out, s)
	}
	return out
}

func TestLintShadowedRule(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		want  []string
	}{
		{"match-all unconditional block shadows a later rule", `
  - id: stop
    verdict: block
    reason: r
  - id: late
    match: {tools: [Bash]}
    condition: 'tool == "Bash"'
    verdict: warn
    reason: r
`, []string{"shadowed_rule p.yaml:8:9 p.yaml:5:9"}},
		{"condition literal true counts as unconditional", `
  - id: stop
    condition: 'true'
    verdict: allow
  - id: late
    verdict: block
    reason: r
`, []string{"shadowed_rule p.yaml:8:9 p.yaml:5:9"}},
		{"an exact name is covered by a glob", `
  - id: mcp
    match: {tools: ["mcp__*"]}
    verdict: ask
    reason: r
  - id: fs
    match: {tools: [mcp__fs_read, "mcp__fs_*"]}
    condition: 'true'
    verdict: block
    reason: r
`, []string{"shadowed_rule p.yaml:9:9 p.yaml:5:9"}},
		{"several earlier rules cover the tools together", `
  - id: a
    match: {tools: [Bash]}
    verdict: block
    reason: r
  - id: b
    match: {tools: [Write]}
    verdict: halt
    reason: r
  - id: c
    match: {tools: [Write, Bash]}
    condition: 'tool != ""'
    verdict: warn
    reason: r
`, []string{"shadowed_rule p.yaml:13:9 p.yaml:5:9 p.yaml:9:9"}},
		{"priority decides evaluation order, not file order", `
  - id: late
    match: {tools: [Bash]}
    condition: 'tool == "Bash"'
    verdict: warn
    reason: r
  - id: stop
    priority: 10
    match: {tools: ["*"]}
    verdict: block
    reason: r
`, []string{"shadowed_rule p.yaml:5:9 p.yaml:10:9"}},
		{"a conditional earlier rule does not shadow", `
  - id: first
    condition: 'tool == "Bash"'
    verdict: block
    reason: r
  - id: late
    verdict: warn
    reason: r
`, nil},
		{"a modify rule does not shadow", `
  - id: clamp
    verdict: modify
    modify: {set: {timeout: '600'}}
  - id: late
    verdict: warn
    reason: r
`, nil},
		{"a rule of the other phase does not shadow", `
  - id: after
    phase: after
    verdict: block
    reason: r
  - id: late
    verdict: warn
    reason: r
`, nil},
		{"a narrower matcher does not shadow a wider one", `
  - id: bash
    match: {tools: [Bash]}
    verdict: block
    reason: r
  - id: all
    verdict: warn
    reason: r
`, nil},
		{"a glob does not cover names outside it", `
  - id: mcp
    match: {tools: ["mcp__fs_*"]}
    verdict: block
    reason: r
  - id: late
    match: {tools: ["mcp__*", mcp__git_push]}
    verdict: warn
    reason: r
`, nil},
		{"* does not cover a glob that may match a /", `
  - id: star
    match: {tools: ["*"]}
    verdict: block
    reason: r
  - id: late
    match: {tools: ["**"]}
    verdict: warn
    reason: r
`, nil},
		{"a later rule of higher priority is not shadowed, it shadows", `
  - id: stop
    verdict: block
    reason: r
  - id: first
    priority: 5
    verdict: warn
    reason: r
`, []string{"shadowed_rule p.yaml:5:9 p.yaml:8:9"}},
		{"a later rule of higher priority with a condition is not shadowed", `
  - id: stop
    verdict: block
    reason: r
  - id: first
    priority: 5
    condition: 'tool == "Bash"'
    verdict: warn
    reason: r
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lintFindings(t, []policy.Source{lintPolicy("p", "rules:"+tt.rules)})
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLintShadowedAcrossFiles(t *testing.T) {
	srcs := []policy.Source{
		lintPolicy("a", "rules:\n  - id: stop\n    verdict: block\n    reason: r\n"),
		lintPolicy("b", "rules:\n  - id: never\n    match: {tools: [Bash]}\n    verdict: warn\n    reason: r\n"),
	}
	got := lintFindings(t, srcs)
	assert.Equal(t, []string{"shadowed_rule b.yaml:5:9 a.yaml:5:9"}, got)
}

func TestLintShadowingWithToolClasses(t *testing.T) {
	classes := policy.Source{Name: "classes.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: ToolClasses
name: classes
classes:
  - name: shell
    tools: [Bash, run_shell_command]
`)}
	tests := []struct {
		name  string
		rules string
		want  []string
	}{
		{"a class rule covers a tool of its class", `
  - id: no-shell
    match: {classes: [shell]}
    verdict: block
    reason: r
  - id: bash
    match: {tools: [Bash]}
    verdict: warn
    reason: r
`, []string{"shadowed_rule p.yaml:9:9 p.yaml:5:9"}},
		{"a class rule is not match-all", `
  - id: no-shell
    match: {classes: [shell]}
    verdict: block
    reason: r
  - id: all
    verdict: warn
    reason: r
`, nil},
		{"a rule with classes matches more than its tools", `
  - id: bash
    match: {tools: [Bash]}
    verdict: block
    reason: r
  - id: shell
    match: {tools: [Bash], classes: [shell]}
    verdict: warn
    reason: r
`, nil},
		{"a tool outside the class is not covered", `
  - id: no-shell
    match: {classes: [shell]}
    verdict: block
    reason: r
  - id: write
    match: {tools: [Write]}
    verdict: warn
    reason: r
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lintFindings(t, []policy.Source{classes, lintPolicy("p", "rules:"+tt.rules)})
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLintFalseCondition(t *testing.T) {
	for _, tt := range []struct {
		cond string
		want []string
	}{
		{"'false'", []string{"false_condition p.yaml:6:17"}},
		{"'(false)'", []string{"false_condition p.yaml:6:17"}},
		{"'1 == 2'", nil}, // only the literal: not a constant folder
		{"'tool == \"x\"'", nil},
	} {
		t.Run(tt.cond, func(t *testing.T) {
			got := lintFindings(t, []policy.Source{lintPolicy("p", "rules:\n  - id: a\n    condition: "+tt.cond+"\n    verdict: warn\n    reason: r\n")})
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLintFalseRuleDoesNotShadow(t *testing.T) {
	// A rule that never fires is reported as such, never as a shadower or
	// shadowed.
	got := lintFindings(t, []policy.Source{lintPolicy("p", `rules:
  - id: off
    condition: 'false'
    verdict: block
    reason: r
  - id: on
    verdict: warn
    reason: r
`)})
	assert.Equal(t, []string{"false_condition p.yaml:6:17"}, got)
}

func TestLintVariablesAndCounters(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"a variable no one reads", `variables:
  - name: cmd
    expression: 'string(args.command)'
rules:
  - id: a
    condition: 'args.command == "ls"'
    verdict: warn
    reason: r
`, []string{"unused_variable p.yaml:5:11"}},
		{"a variable read only by an unused variable", `variables:
  - name: cmd
    expression: 'string(args.command)'
  - name: words
    expression: 'cmd.split(" ")'
rules:
  - id: a
    verdict: warn
    reason: r
`, []string{"unused_variable p.yaml:5:11", "unused_variable p.yaml:7:11"}},
		{"a variable read by a rule, through another", `variables:
  - name: cmd
    expression: 'string(args.command)'
  - name: words
    expression: 'cmd.split(" ")'
rules:
  - id: a
    condition: '"rm" in words'
    verdict: warn
    reason: r
`, nil},
		{"a variable shadowed by a comprehension variable is not read", `variables:
  - name: x
    expression: '1'
rules:
  - id: a
    condition: '[1, 2].exists(x, x > 1)'
    verdict: warn
    reason: r
`, []string{"unused_variable p.yaml:5:11"}},
		{"a variable read in a message, a counter key and modify", `variables:
  - name: m
    expression: '"why"'
  - name: k
    expression: 'tool'
  - name: v
    expression: '"600"'
counters:
  - name: c
    key: 'k'
    increment_when: 'true'
rules:
  - id: a
    condition: 'counters.c > 3'
    verdict: warn
    message: 'm'
  - id: b
    verdict: modify
    modify: {set: {timeout: 'v'}}
`, nil},
		{"a counter no one reads", `counters:
  - name: web
    increment_when: 'tool == "WebFetch"'
rules:
  - id: a
    verdict: warn
    reason: r
`, []string{"unused_counter p.yaml:5:11"}},
		{"a counter read by index, and one read by a variable", `variables:
  - name: many
    expression: 'counters.b > 2'
counters:
  - name: a
    increment_when: 'true'
  - name: b
    increment_when: 'true'
rules:
  - id: r
    condition: 'counters["a"] > 1 || many'
    verdict: warn
    reason: r
`, nil},
		{"reading counters dynamically reads every counter", `counters:
  - name: a
    increment_when: 'true'
rules:
  - id: r
    condition: 'counters[tool] > 1'
    verdict: warn
    reason: r
`, nil},
		{"reading counters by name reads only the counters named", `counters:
  - name: a
    increment_when: 'true'
  - name: b
    increment_when: 'true'
  - name: c
    increment_when: 'true'
rules:
  - id: r
    condition: 'counters.a > 1 || counters["b"] > 1'
    verdict: warn
    reason: r
`, []string{"unused_counter p.yaml:9:11"}},
		{"a counter tested with has is read", `counters:
  - name: a
    increment_when: 'true'
  - name: b
    increment_when: 'true'
rules:
  - id: r
    condition: 'has(counters.a)'
    verdict: warn
    reason: r
`, []string{"unused_counter p.yaml:7:11"}},
		{"a counter read only by an unused variable", `variables:
  - name: many
    expression: 'counters.a > 2'
counters:
  - name: a
    increment_when: 'true'
rules:
  - id: r
    verdict: warn
    reason: r
`, []string{"unused_variable p.yaml:5:11", "unused_counter p.yaml:8:11"}},
		{"a counter read but never incremented", `counters:
  - name: a
    increment_when: 'false'
rules:
  - id: r
    condition: 'counters.a > 2'
    verdict: warn
    reason: r
`, []string{"counter_never_incremented p.yaml:6:22"}},
		{"an unread counter that is never incremented is only unused", `counters:
  - name: a
    increment_when: 'false'
rules:
  - id: r
    verdict: warn
    reason: r
`, []string{"unused_counter p.yaml:5:11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lintFindings(t, []policy.Source{lintPolicy("p", tt.body)})
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLintVariablesAreScopedToTheirPolicy(t *testing.T) {
	// Policy b's rule mentions a name like a's variable, but a's variable is
	// not visible there: b's own variable of that name is the one read.
	srcs := []policy.Source{
		lintPolicy("a", "variables:\n  - name: cmd\n    expression: 'tool'\nrules:\n  - id: ra\n    condition: 'tool == \"y\"'\n    verdict: warn\n    reason: r\n"),
		lintPolicy("b", "variables:\n  - name: cmd\n    expression: 'tool'\nrules:\n  - id: rb\n    condition: 'cmd == \"x\"'\n    verdict: warn\n    reason: r\n"),
	}
	assert.Equal(t, []string{"unused_variable a.yaml:5:11"}, lintFindings(t, srcs))
}

func TestLintMissingReason(t *testing.T) {
	for _, tt := range []struct {
		rule string
		want []string
	}{
		{"verdict: block", []string{"missing_reason p.yaml:7:14"}},
		{"verdict: halt", []string{"missing_reason p.yaml:7:14"}},
		{"verdict: ask", []string{"missing_reason p.yaml:7:14"}},
		{"verdict: block\n    reason: '  '", []string{"missing_reason p.yaml:7:14"}},
		{"verdict: block\n    reason: Because.", nil},
		{"verdict: block\n    message: '\"no: \" + tool'", nil},
		{"verdict: warn", nil},
		{"verdict: allow", nil},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			got := lintFindings(t, []policy.Source{lintPolicy("p", "rules:\n  - id: a\n    condition: 'tool == \"x\"'\n    "+tt.rule+"\n")})
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLintCostOverBudget(t *testing.T) {
	for _, tt := range []struct {
		cond string
		want []string
	}{
		{`args.a.exists(x, args.b.exists(y, x == y))`, []string{"cost_over_budget p.yaml:6:17"}},
		// A parse per entry of a list is linear in the call: 100 commands of
		// 1,000 characters (CostAssumedEntries) are within the budget;
		// nested over two lists, they are not.
		{`args.a.exists(x, shell.commands(string(x)).size() > 2)`, nil},
		{`args.a.exists(x, args.b.exists(y, shell.commands(string(x) + string(y)).size() > 2))`, []string{"cost_over_budget p.yaml:6:17"}},
		// Issue 16: a one-level scan over a message list was "1.3x over
		// budget" with 1,000 messages of 1,000 characters.
		{`args.messages.exists(m, string(m.content).lowerAscii().contains("password"))`, nil},
		{`args.messages.exists(m, string(m.content).matches("(?i)password\\s*[:=]"))`, nil},
		{`args.a.exists(x, string(x).matches("^rm"))`, nil},
		{`shell.commands(string(args.command)).exists(c, c.program == "rm")`, nil},
		{`string(args.command).matches("rm\\s+-rf")`, nil},
		{`[1, 2, 3].exists(x, [4, 5].exists(y, x == y))`, nil},
	} {
		t.Run(tt.cond, func(t *testing.T) {
			got := lintFindings(t, []policy.Source{lintPolicy("p", "rules:\n  - id: a\n    condition: '"+tt.cond+"'\n    verdict: warn\n    reason: r\n")})
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestLintCostSizes checks what the cost analysis knows of the sizes of
// variables and shell results: each case is a set of variables and a rule
// condition (at p.yaml:L:17, L = 6, or 7 + 2 × the number of variables).
func TestLintCostSizes(t *testing.T) {
	for _, tt := range []struct {
		name    string
		vars    [][2]string // name, expression
		cond    string
		flagged bool
	}{
		// A constant list variable has its exact size, not CostAssumedSize.
		{"constant list variable keeps its size",
			[][2]string{{"names", `["ls", "cat", "head", "tail", "wc", "sort"]`}},
			`args.a.exists(x, names.exists(n, string(x).startsWith(n)))`, false},
		{"the same loop over an argument is flagged", nil,
			`args.a.exists(x, args.b.exists(n, string(x).startsWith(string(n))))`, true},
		{"a constant derived from constants keeps its size",
			[][2]string{{"base", `["ls", "cat"]`}, {"names", `base + ["head"] + base.map(b, b + "x")`}},
			`args.a.exists(x, names.exists(n, string(x).startsWith(n)))`, false},
		{"a constant map's entries keep their sizes",
			[][2]string{{"flags", `{"find": ["-exec", "-delete"], "sort": ["-o"]}`}},
			`args.a.exists(x, flags[string(x)].exists(f, string(x).startsWith(f)))`, false},
		// A variable bound to an expression that reads call data has the
		// size cel-go estimates for the expression's result.
		{"variable bound to an expression keeps its estimate",
			[][2]string{{"pair", `[tool, cwd]`}},
			`args.a.exists(x, pair.exists(p, string(x) == p))`, false},
		{"variable bound to shell.commands costs what the call costs inline",
			[][2]string{{"cmds", `shell.commands(command)`}},
			`cmds.exists(c, c.args.exists(a, a in ["-f", "--force"]))`, false},
		{"variable bound to an argument list is still an unbounded list",
			[][2]string{{"items", `args.a`}},
			`items.exists(x, items.exists(y, x == y))`, true},
		// Nested comprehensions over inputs stay flagged; one scan does not.
		{"nested comprehension over an argument list is flagged", nil,
			`args.a.exists(x, args.b.exists(y, x == y))`, true},
		{"a single scan of an argument list is not", nil,
			`args.a.exists(x, string(x).contains("y"))`, false},
		// Shell results: a loop over the words of every command is linear in
		// the command string; two nested loops over one command's words are not.
		{"words of every command", nil,
			`shell.commands(command).exists(c, c.program == "rm" && c.operands.exists(o, o in ["/", "/*", "~", "$HOME"]))`, false},
		{"words of every command, through shell.parse", nil,
			`shell.parse(command).commands.exists(c, c.args.exists(a, a.startsWith("--force")))`, false},
		{"words of one command against themselves", nil,
			`shell.commands(command).exists(c, c.args.exists(a, c.args.exists(b, a == b + "x")))`, true},
		{"words of every command against every command", nil,
			`shell.commands(command).exists(c, c.args.exists(a, shell.commands(command).exists(d, d.args.exists(b, a == b))))`, true},
		{"a shell parse inside a loop over an argument list", nil,
			`args.a.exists(x, shell.commands(string(x)).size() > 2)`, false},
		{"a shell parse inside two nested loops over argument lists", nil,
			`args.a.exists(x, args.b.exists(y, shell.commands(string(x) + string(y)).size() > 2))`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := ""
			if len(tt.vars) > 0 {
				body = "variables:\n"
				for _, v := range tt.vars {
					body += "  - name: " + v[0] + "\n    expression: '" + v[1] + "'\n"
				}
			}
			body += "rules:\n  - id: a\n    condition: '" + tt.cond + "'\n    verdict: warn\n    reason: r\n"
			got := lintFindings(t, []policy.Source{lintPolicy("p", body)})
			var want []string
			if tt.flagged {
				line := 6
				if len(tt.vars) > 0 {
					line = 7 + 2*len(tt.vars)
				}
				want = []string{fmt.Sprintf("cost_over_budget p.yaml:%d:17", line)}
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestLintCostBuiltinPolicies pins the cost_over_budget warnings of the
// built-in policies and the cookbook. The cookbook is clean. The built-ins
// lint clean (`celguard lint --fail-on warning policies/` exits 0): each
// of these carries a `# celguard:ignore cost_over_budget -- reason`
// comment, and is listed here so that a new one is a failure, not a
// silent addition. Each is an expression that loops over every word of
// every shell command (or over a list derived from them) and does per-word
// work: the estimate bounds the words of a command string of
// CostAssumedSize bytes by (shell.MaxDepth+1) × (n/2+1) and each word by n
// bytes (shell.SizeBounds, which the parser guarantees), and multiplies the
// two, while the real sum of word lengths is bounded by far less.
// policies/cost_test.go measures them: within the budget for 1 KiB
// commands, over it (failing closed) for `rm -rf` with 2,000 operands.
// Remove an entry when it is fixed.
func TestLintCostBuiltinPolicies(t *testing.T) {
	// costWarnings returns the cost warnings, and those suppressed.
	costWarnings := func(srcs []policy.Source) (warned, suppressed []string) {
		_, ds, err := compile.Check(srcs)
		require.NoError(t, err)
		for _, d := range ds {
			if d.Code != policy.CodeCostOverBudget {
				continue
			}
			s := filepath.Base(d.Pos.File) + " " + strings.SplitN(d.Message, ":", 2)[0]
			if d.Suppressed != nil {
				assert.NotEmpty(t, d.Suppressed.Reason)
				suppressed = append(suppressed, s)
			} else {
				warned = append(warned, s)
			}
		}
		return warned, suppressed
	}
	builtins, err := policies.Sources()
	require.NoError(t, err)
	warned, suppressed := costWarnings(builtins)
	assert.Empty(t, warned, "the built-in policies must lint clean at --fail-on warning")
	assert.Equal(t, []string{
		// Paths of every operand, made absolute against cwd (both strings
		// of up to 1,000 characters, per operand).
		"dangerous-commands.yaml variable delete_targets",
		"dangerous-commands.yaml variable permission_targets",
		"dangerous-commands.yaml variable device_write_targets",
		"dangerous-commands.yaml rule dangerous-recursive-delete condition",
		"dangerous-commands.yaml rule dangerous-recursive-delete message",
		// A delete whose program word is assembled at run time ($(echo rm)),
		// per word of every command, like dangerous-recursive-delete.
		"dangerous-commands.yaml rule dangerous-assembled-delete condition",
		"dangerous-commands.yaml rule dangerous-recursive-permissions condition",
		"dangerous-commands.yaml rule dangerous-device-write condition",
		"dangerous-commands.yaml rule dangerous-device-write message",
		// A regex built from each command's program, matched against the
		// whole command: commands × command length × program length.
		"dangerous-commands.yaml rule dangerous-fork-bomb condition",
		// Wrappers and upstream are not linear in the command (a nested
		// command inherits its parents' wrappers; a|a|a gives each stage
		// every earlier one), so their loops keep their full bound.
		// The shell analysis of a cloud CLI line given as an argument.
		// URLs of every command's words, and the untrusted-content rule
		// over them: per word of every command.
		"exfiltration.yaml variable fetched_urls",
		"exfiltration.yaml variable outside_urls",
		"exfiltration.yaml rule exfiltration-after-untrusted-content-shell condition",
		"mcp-effects.yaml rule mcp-cloud-cli condition",
		"risky-commands.yaml variable container_host_access",
		"risky-commands.yaml rule risky-privilege condition",
		"risky-commands.yaml rule risky-pipe-to-shell condition",
		// lowerAscii of every argument of every command.
		"risky-commands.yaml rule risky-skip-hooks condition",
		"risky-commands.yaml rule risky-container-remote-build condition",
		"risky-commands.yaml rule risky-infra-destroy condition",
		"risky-commands.yaml rule risky-infra-access condition",
		// A loop over each command's unsafe_args inside the loop over its args.
		"safe-defaults.yaml variable line_writes",
		"safe-defaults.yaml variable unsafe_commands",
		// A regex replacement over a result of unknown size (documented in
		// the policy: it fails closed on a huge result).
		"secret-redaction.yaml rule redact-extra-tokens modify.content",
		// Every write target of every command (shell.writes is bounded per
		// command, and the estimate multiplies that by the commands: a
		// quadratic bound for a linear sum), made absolute against the
		// working directory and each cd, and tested against every protected
		// place; every word of every command for the key; the arguments of
		// other tools, their names sorted (a map's order is not stable, a
		// message must be). At run time a target is resolved against every
		// cd only when it names a protected place; the bundle's verdicts on
		// 45 KB command lines are unchanged.
		"self-protection.yaml variable file_targets",
		"self-protection.yaml variable file_hits",
		"self-protection.yaml variable other_hits",
		"self-protection.yaml variable shell_writes",
		"self-protection.yaml variable dynamic_writes",
		"self-protection.yaml variable dynamic_hits",
		"self-protection.yaml variable hot_bases",
		"self-protection.yaml variable static_writes",
		"self-protection.yaml variable shell_targets",
		"self-protection.yaml variable glob_options",
		"self-protection.yaml variable shell_hits",
		"self-protection.yaml variable admin_command",
		// Each argument of each command against the kill programs.
		"self-protection.yaml variable daemon_kill",
		"self-protection.yaml variable file_key_reads",
		"self-protection.yaml variable shell_read_words",
		"self-protection.yaml variable key_hot_bases",
		"self-protection.yaml variable shell_key_targets",
		"self-protection.yaml variable shell_key_reads", "self-protection.yaml variable shell_secret_reads",
		// Every word of every command, normalised and globbed; regex.extractAll
		// has no result-size estimate, so the lists below it are unbounded.
		// Secret reads through cloud and vault CLIs, and programs that print
		// the environment: per word of every command.
		"sensitive-files.yaml variable cloud_secret_reads",
		"sensitive-files.yaml variable env_prints",
		"sensitive-files.yaml variable file_targets",
		"sensitive-files.yaml variable shell_words",
		"sensitive-files.yaml variable shell_bases",
		"sensitive-files.yaml variable shell_targets",
		"sensitive-files.yaml variable shell_globs",
		"sensitive-files.yaml variable tree_dir_hits",
		"sensitive-files.yaml variable file_hits",
		"sensitive-files.yaml variable file_hit_shown",
		"sensitive-files.yaml variable glob_hits",
		"sensitive-files.yaml variable shell_hits",
		"sensitive-files.yaml variable shell_hit_shown",
		// The hits as written, for the messages: each target again, unfolded.
		// Every write target of every command, made absolute and tested
		// against the workspace and extra_write_dirs.
		"workspace-boundary.yaml variable outside_file_writes",
		"workspace-boundary.yaml variable shell_write_targets",
		"workspace-boundary.yaml variable unresolved_targets",
		"workspace-boundary.yaml variable outside_shell_writes",
		"workspace-boundary.yaml variable leaves_workspace",
		// The reasons, references and commands of every written toolchain
		// file, each command through the shell analysis; the write targets
		// of every command of a shell line.
		"workspace-executables.yaml variable shell_known_writes",
		"workspace-executables.yaml variable analyses",
		"workspace-executables.yaml variable unproven",
		"workspace-executables.yaml variable untrusted_uses",
		"workspace-executables.yaml variable unsafe_commands",
		"workspace-executables.yaml variable shell_content_writes",
		"workspace-executables.yaml variable shell_unknown_targets",
		"workspace-executables.yaml variable recorded_writes",
		"workspace-executables.yaml variable unproven_runs",
	}, suppressed)

	cookbook, err := policy.LoadPaths("../docs/cookbook")
	require.NoError(t, err)
	warned, suppressed = costWarnings(cookbook)
	assert.Empty(t, warned)
	assert.Empty(t, suppressed)
}

func TestLintCostMessageSaysByHowMuchAndWhatToDo(t *testing.T) {
	src := lintPolicy("p", "rules:\n  - id: a\n    condition: 'has(args.a) && has(args.b) && args.a.exists(x, args.b.exists(y, shell.commands(string(x) + string(y)).size() > 2))'\n    verdict: warn\n    reason: r\n")
	_, ds, err := compile.Check([]policy.Source{src})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	msg := ds[0].Message
	assert.Regexp(t, `^rule a condition: estimated worst-case cost [0-9,]+ exceeds the runtime budget of 1,000,000 by [0-9.]+x `, msg)
	assert.Contains(t, msg, "assuming strings of up to 1,000 characters and lists or maps of up to 100 entries")
	assert.Contains(t, msg, "Avoid nesting comprehensions")

	// The budget is the environment's.
	env, err := celenv.New(celenv.WithCostLimit(1 << 40))
	require.NoError(t, err)
	assert.Empty(t, lintFindings(t, []policy.Source{src}, compile.WithEnv(env)))
	env, err = celenv.New(celenv.WithCostLimit(10))
	require.NoError(t, err)
	cheap := lintPolicy("p", "rules:\n  - id: a\n    condition: 'string(args.command).contains(\"x\")'\n    verdict: warn\n    reason: r\n")
	assert.Equal(t, []string{"cost_over_budget p.yaml:6:17"}, lintFindings(t, []policy.Source{cheap}, compile.WithEnv(env)))
}

func TestLintOnlyWhenTheSetCompiles(t *testing.T) {
	// With an error in the set, the analyses stay quiet: a rule whose
	// condition failed to compile would look unconditional.
	srcs := []policy.Source{lintPolicy("p", `rules:
  - id: a
    condition: 'tool ==='
    verdict: block
  - id: b
    verdict: block
`)}
	_, ds, err := compile.Check(srcs)
	require.NoError(t, err)
	for _, d := range ds {
		assert.Equal(t, policy.SeverityError, d.Severity, "%v", d)
	}
	assert.True(t, ds.HasErrors())
}

func TestLintWarningsReachTheCheckedSet(t *testing.T) {
	srcs := []policy.Source{lintPolicy("p", "rules:\n  - id: a\n    verdict: block\n")}
	set, ds, err := compile.Check(srcs)
	require.NoError(t, err)
	require.NotNil(t, set, "warnings do not fail a compile")
	require.Len(t, set.Warnings(), 1)
	assert.Equal(t, policy.CodeMissingReason, set.Warnings()[0].Code)
	assert.Equal(t, set.Warnings(), ds)

	// Compile, for programs that only decide, skips the analyses.
	set, err = compile.Compile(srcs)
	require.NoError(t, err)
	assert.Empty(t, set.Warnings())
}

func TestLintKeepsErrorsShown(t *testing.T) {
	// duplicate ids across files, invalid literals and verdicts a phase
	// cannot honour are errors that lint (Check) reports.
	srcs := []policy.Source{
		lintPolicy("a", "rules:\n  - id: x\n    condition: 'tool.matches(\"(\")'\n    verdict: block\n    reason: r\n"),
		lintPolicy("b", "rules:\n  - id: x\n    phase: after\n    verdict: ask\n    reason: r\n"),
	}
	_, ds, err := compile.Check(srcs)
	require.NoError(t, err)
	var codes []policy.Code
	for _, d := range ds {
		codes = append(codes, d.Code)
	}
	assert.ElementsMatch(t, []policy.Code{policy.CodeInvalidLiteral, policy.CodeDuplicateRuleID, policy.CodeVerdictPhase}, codes)
}

// TestLintKnowsEveryMatcherField guards the shadowing analysis: it decides
// which tools a rule admits from Rule.Tools (and MatchesTool). A new field
// of policy.Rule that narrows the tools a rule matches (such as tool classes)
// must be taught to compile/lint.go's coverage, or the analysis would call
// a narrowed rule match-all and report false shadowing. Add the field here
// once lint.go handles it.
func TestLintKnowsEveryMatcherField(t *testing.T) {
	known := []string{"ID", "Pos", "Description", "Priority", "Phase", "Tools", "Classes", "Condition", "Verdict", "VerdictPos",
		"Reason", "Message", "Code", "FailurePolicy", "Modify", "Enforcement", "EnforcementPos", "Metadata", "Judge", "JudgePos", "Labels", "LabelsPos",
		"Writes"} // Writes names what a call writes; it does not narrow the tools a rule matches
	var got []string
	rt := reflect.TypeFor[policy.Rule]()
	for i := range rt.NumField() {
		got = append(got, rt.Field(i).Name)
	}
	for _, name := range got {
		assert.True(t, slices.Contains(known, name),
			"policy.Rule has a new field %s: if it narrows which tools a rule matches, teach compile/lint.go (matchesAll, ruleCovers) about it; then add it to known", name)
	}
}

// TestLintFixtures renders testdata/lint/*.txtar as `celguard lint` prints
// them and compares with each archive's want.diag section (go test -update
// rewrites it). Each archive holds the positive case of an analysis and its
// near misses.
func TestLintFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "lint", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	seen := map[policy.Code]bool{}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(p)
			require.NoError(t, err)
			var srcs []policy.Source
			want, hasWant := "", false
			for _, f := range ar.Files {
				if f.Name == wantSection {
					want, hasWant = string(f.Data), true
					continue
				}
				srcs = append(srcs, policy.Source{Name: f.Name, Data: f.Data})
			}
			_, ds, err := compile.Check(srcs)
			require.NoError(t, err)
			var b strings.Builder
			require.NoError(t, policy.WriteText(&b, ds.Unsuppressed(), policy.LinesOf(srcs)))
			for _, d := range ds {
				if s := d.Suppressed; s != nil {
					fmt.Fprintf(&b, "suppressed: %s %s by %s -- %s\n", d.Code, d.Pos, s.Pos, s.Reason)
				}
			}
			got := b.String()
			for _, d := range ds {
				seen[d.Code] = true
				assert.Equal(t, policy.SeverityWarning, d.Severity, "%v", d)
			}
			if *update {
				i := slices.IndexFunc(ar.Files, func(f txtar.File) bool { return f.Name == wantSection })
				if i < 0 {
					ar.Files = append(ar.Files, txtar.File{Name: wantSection})
					i = len(ar.Files) - 1
				}
				ar.Files[i].Data = []byte(got)
				require.NoError(t, os.WriteFile(p, txtar.Format(ar), 0o644))
				return
			}
			require.True(t, hasWant, "no %s section; run go test -update", wantSection)
			assert.Equal(t, want, got)
		})
	}
	for _, c := range lintCodes {
		assert.True(t, seen[c], "no testdata/lint fixture triggers %s", c)
	}
}
