package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is a 1-based position in a policy file. Col counts characters (runes)
// from 1; Col 0 means the column is unknown.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// String renders the position as file:line:col, or only what is known of
// it: the file name alone when the line is unknown.
func (p Pos) String() string {
	switch {
	case p.Line == 0 && p.File == "":
		return "celguard"
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// IsZero reports whether the position is unknown.
func (p Pos) IsZero() bool { return p.Line == 0 }

// Compare orders positions by file, line and column.
func (p Pos) Compare(o Pos) int {
	return cmp.Or(cmp.Compare(p.File, o.File), cmp.Compare(p.Line, o.Line), cmp.Compare(p.Col, o.Col))
}

// Severity grades a diagnostic.
type Severity string

// Severities, from most to least severe.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Code is a stable, machine-readable diagnostic identifier. Codes are never
// renamed or reused: CI filters and editors match on them. docs/diagnostics.md
// documents each one with an example and its fix.
type Code string

// Diagnostic codes. Messages may change; codes may not.
const (
	CodeYAMLSyntax         Code = "yaml_syntax"         // the file is not valid YAML
	CodeUnknownField       Code = "unknown_field"       // a key the format does not define
	CodeWrongType          Code = "wrong_type"          // a value of the wrong YAML type
	CodeMissingField       Code = "missing_field"       // a required key is absent
	CodeInvalidValue       Code = "invalid_value"       // a value outside the allowed set or range
	CodeInvalidVerdict     Code = "invalid_verdict"     // verdict is not allow|warn|block|halt|ask|modify
	CodeInvalidPhase       Code = "invalid_phase"       // phase is not before|after|turn_end
	CodeInvalidDuration    Code = "invalid_duration"    // a window that is not a positive Go duration
	CodeInvalidGlob        Code = "invalid_glob"        // a malformed tool-name glob
	CodeInvalidID          Code = "invalid_id"          // a name or id with characters outside [A-Za-z0-9_.-]
	CodeDuplicateRuleID    Code = "duplicate_rule_id"   // two rules share an id in one policy set
	CodeDuplicatePolicy    Code = "duplicate_policy"    // two policies share a name in one policy set
	CodeDuplicateName      Code = "duplicate_name"      // two variables or counters share a name in one policy
	CodeReservedName       Code = "reserved_name"       // a variable named like a built-in variable
	CodeVerdictPhase       Code = "verdict_phase"       // a verdict (or match) the phase cannot honour (ask after the call, block at turn end)
	CodeModifyMismatch     Code = "modify_mismatch"     // a modify block on a non-modify rule, or the reverse
	CodeModifyPhase        Code = "modify_phase"        // a modify field the phase cannot apply
	CodeCELSyntax          Code = "cel_syntax"          // a CEL expression that does not parse
	CodeCELType            Code = "cel_type"            // a CEL expression that does not type-check
	CodeWrongResultType    Code = "wrong_result_type"   // an expression of the wrong result type
	CodeResultInBefore     Code = "result_in_before"    // `result` read where no result exists yet
	CodeVariablePhase      Code = "variable_phase"      // a built-in variable read in a phase that does not have it (args at input, messages before)
	CodeInvalidMask        Code = "invalid_mask"        // a decision_log.mask argument path that is not keys or * separated by dots
	CodeMonitorMandatory   Code = "monitor_mandatory"   // mode: monitor on a policy whose rules are mandatory
	CodeUndeclaredCounter  Code = "undeclared_counter"  // counters.X where X is not declared
	CodeConflictingDefault Code = "conflicting_default" // two policies set different default verdicts
	CodeNoPolicies         Code = "no_policies"         // a load that found no policy file
	CodeTooManyRules       Code = "too_many_rules"      // more rules than the compiler's limit
	CodeCounterInCounter   Code = "counter_in_counter"  // a counter expression that reads counters
	CodeInvalidLiteral     Code = "invalid_literal"     // a malformed regex, glob or domain literal
	CodeOverridden         Code = "overridden"          // info: a policy or rule replaced or disabled by a higher layer
	CodeUnknownOverride    Code = "unknown_override"    // warning: an Overrides file disables something no lower layer has
	CodeUndeclaredClass    Code = "undeclared_class"    // match.classes names a class no ToolClasses file declares
	CodeNoToolClasses      Code = "no_tool_classes"     // command, paths or classes read in a set with no tool classes
	CodeInvalidMandatory   Code = "invalid_mandatory"   // a mandatory rule whose verdict is allow or modify
	CodeMandatoryKept      Code = "mandatory_kept"      // warning: an Overrides file or another layer tried to lift a mandatory rule
	CodeUntrustedIgnored   Code = "untrusted_ignored"   // warning: what an untrusted project may not do (Overrides, replacements) is ignored
	CodeHostDegrades       Code = "host_degrades"       // warning (lint --hosts): a rule's verdict degrades, or has no effect, on a named host
)

// Layer codes: problems with where the policies come from.
const (
	CodeAdminLayerUnsafe Code = "admin_layer_unsafe" // the admin layer (/etc/celguard) could be written by someone other than root
)

// Lint codes: warnings compile.Check reports about a set that compiles, for
// rules, variables and counters that cannot do what their author meant.
const (
	CodeShadowedRule            Code = "shadowed_rule"             // an earlier unconditional rule always decides first
	CodeFalseCondition          Code = "false_condition"           // a rule whose condition is the literal false
	CodeUnusedVariable          Code = "unused_variable"           // a variable no rule or counter reads
	CodeUnusedCounter           Code = "unused_counter"            // a counter no rule or variable reads
	CodeCounterNeverIncremented Code = "counter_never_incremented" // a counter read but whose increment_when is false
	CodeMissingReason           Code = "missing_reason"            // block, halt or ask with neither reason nor message
	CodeCostOverBudget          Code = "cost_over_budget"          // an expression whose worst-case cost exceeds the budget
	CodeDuplicateCondition      Code = "duplicate_condition"       // two rules with the same condition, priority, phase and overlapping tools
	CodeInvalidSuppression      Code = "invalid_suppression"       // a # celguard:ignore comment with an unknown code or no reason
	CodeUnguardedArgument       Code = "unguarded_argument"        // a rule for every tool reads args.X without has(args.X)
	CodeToolsPhaseNotMCP        Code = "tools_phase_not_mcp"       // a tools-phase rule names a tool that is not an MCP tool: no host lists it through celguard
)

// Codes of the set in force (celguard lint --effective, compile.Relaxations)
// and of test suites naming built-in policies.
const (
	CodeCrossLayerShadowed  Code = "cross_layer_shadowed"  // warning: a rule of another layer always decides first
	CodeUntrustedWouldRelax Code = "untrusted_would_relax" // info: an untrusted rule that would pre-empt a stricter one once trusted
	CodeUnknownBuiltin      Code = "unknown_builtin"       // a test suite's builtin:NAME names no bundle and no built-in policy
)

// Diagnostic is one problem found in a policy file.
type Diagnostic struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Pos      Pos      `json:"pos"`
	Message  string   `json:"message"`
	// Related points at other places involved, such as the first definition of
	// a duplicate id.
	Related []Pos `json:"related,omitempty"`
	// Suppressed is the `# celguard:ignore` comment that suppresses this
	// warning, when one does (Suppression).
	Suppressed *Suppression `json:"suppressed,omitempty"`
}

// Error renders the diagnostic as file:line:col: code: message.
func (d Diagnostic) Error() string {
	return fmt.Sprintf("%s: %s: %s", d.Pos, d.Code, d.Message)
}

// Diagnostics is every problem found, sorted by position. It implements error;
// use Err to turn an empty list into a nil error.
type Diagnostics []Diagnostic

// Error lists every diagnostic, one a line.
func (ds Diagnostics) Error() string {
	var b strings.Builder
	if len(ds) > 1 {
		fmt.Fprintf(&b, "%d problems:\n", len(ds))
	}
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Error())
	}
	return b.String()
}

// Sort orders diagnostics by file, line, column, code and message.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(a.Pos.Compare(b.Pos), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
}

// HasErrors reports whether any diagnostic has error severity.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == SeverityError })
}

// Errors returns only the diagnostics of error severity.
func (ds Diagnostics) Errors() Diagnostics {
	return ds.filter(func(d Diagnostic) bool { return d.Severity == SeverityError })
}

// filter returns the diagnostics keep keeps, in order.
func (ds Diagnostics) filter(keep func(Diagnostic) bool) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// Err returns nil when there is no error-severity diagnostic, and the sorted
// list otherwise. It avoids the typed-nil interface trap.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	ds.Sort()
	return ds
}

// errorf appends an error-severity diagnostic.
func (ds *Diagnostics) errorf(code Code, pos Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Code: code, Severity: SeverityError, Pos: pos, Message: fmt.Sprintf(format, args...)})
}
