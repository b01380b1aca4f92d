package output

import "github.com/celguard/celguard/policy"

// codeInfo describes a diagnostic code for the SARIF rule catalogue.
type codeInfo struct {
	code  policy.Code
	level policy.Severity // the severity celguard reports it with
	short string          // one sentence: what the code means
}

// codeCatalogue lists every code of policy/diag.go, in its order. A test
// keeps it complete; docs/diagnostics.md has the long form of each.
var codeCatalogue = []codeInfo{
	{policy.CodeYAMLSyntax, policy.SeverityError, "The file is not valid YAML."},
	{policy.CodeUnknownField, policy.SeverityError, "A key the format does not define."},
	{policy.CodeWrongType, policy.SeverityError, "A value of the wrong YAML type."},
	{policy.CodeMissingField, policy.SeverityError, "A required key is absent."},
	{policy.CodeInvalidValue, policy.SeverityError, "A value outside the allowed set or range."},
	{policy.CodeInvalidVerdict, policy.SeverityError, "A verdict that is not allow, warn, block, halt, ask or modify."},
	{policy.CodeInvalidPhase, policy.SeverityError, "A phase that is not before, after, turn_end, input or output."},
	{policy.CodeInvalidDuration, policy.SeverityError, "A window that is not a positive Go duration."},
	{policy.CodeInvalidGlob, policy.SeverityError, "A malformed tool-name glob."},
	{policy.CodeInvalidID, policy.SeverityError, "A name or id with characters outside [A-Za-z0-9_.:-]."},
	{policy.CodeDuplicateRuleID, policy.SeverityError, "Two rules share an id in one policy set."},
	{policy.CodeDuplicatePolicy, policy.SeverityError, "Two policies share a name in one policy set."},
	{policy.CodeDuplicateName, policy.SeverityError, "Two variables or counters share a name in one policy."},
	{policy.CodeReservedName, policy.SeverityError, "A variable named like a built-in variable."},
	{policy.CodeVerdictPhase, policy.SeverityError, "A verdict (or match) the phase cannot honour (ask after the call, block at turn end)."},
	{policy.CodeModifyMismatch, policy.SeverityError, "A modify block on a non-modify rule, or the reverse."},
	{policy.CodeModifyPhase, policy.SeverityError, "A modify field the phase cannot apply."},
	{policy.CodeCELSyntax, policy.SeverityError, "A CEL expression that does not parse."},
	{policy.CodeCELType, policy.SeverityError, "A CEL expression that does not type-check."},
	{policy.CodeWrongResultType, policy.SeverityError, "An expression of the wrong result type."},
	{policy.CodeResultInBefore, policy.SeverityError, "result read where no result exists yet."},
	{policy.CodeVariablePhase, policy.SeverityError, "A built-in variable read in a phase that does not have it (args at input, messages before)."},
	{policy.CodeInvalidMask, policy.SeverityError, "A decision_log.mask argument path that is not keys or * separated by dots."},
	{policy.CodeMonitorMandatory, policy.SeverityError, "mode: monitor on a policy whose rules are mandatory."},
	{policy.CodeUndeclaredCounter, policy.SeverityError, "counters.x read where the policy declares no counter x."},
	{policy.CodeConflictingDefault, policy.SeverityError, "Two policies set different default verdicts."},
	{policy.CodeNoPolicies, policy.SeverityError, "A load that found no policy file."},
	{policy.CodeTooManyRules, policy.SeverityError, "More rules than the compiler's limit."},
	{policy.CodeCounterInCounter, policy.SeverityError, "A counter expression that reads counters."},
	{policy.CodeInvalidLiteral, policy.SeverityError, "A malformed regex, glob or domain literal."},
	{policy.CodeOverridden, policy.SeverityInfo, "A policy or rule replaced or disabled by a higher layer."},
	{policy.CodeUnknownOverride, policy.SeverityWarning, "An Overrides file disables something no lower layer has."},
	{policy.CodeUndeclaredClass, policy.SeverityError, "match.classes names a class no tool-class file declares."},
	{policy.CodeNoToolClasses, policy.SeverityError, "command, paths or classes read in a set with no tool classes, where they are always empty."},
	{policy.CodeInvalidMandatory, policy.SeverityError, "A mandatory rule whose verdict is allow or modify."},
	{policy.CodeMandatoryKept, policy.SeverityWarning, "An Overrides file or another layer tried to lift a mandatory rule; it stays."},
	{policy.CodeUntrustedIgnored, policy.SeverityWarning, "What an untrusted project may not do (Overrides, replacements) is ignored until it is trusted."},
	{policy.CodeHostDegrades, policy.SeverityWarning, "celguard lint --hosts: a rule's verdict degrades, or has no effect, on a named host."},
	{policy.CodeAdminLayerUnsafe, policy.SeverityError, "The admin layer (/etc/celguard) could be written by someone other than root; nothing is decided."},
	{policy.CodeShadowedRule, policy.SeverityWarning, "A rule that can never fire: an earlier unconditional rule always decides first."},
	{policy.CodeFalseCondition, policy.SeverityWarning, "A rule whose condition is the literal false."},
	{policy.CodeUnusedVariable, policy.SeverityWarning, "A variable no rule or counter reads."},
	{policy.CodeUnusedCounter, policy.SeverityWarning, "A counter no rule or variable reads."},
	{policy.CodeCounterNeverIncremented, policy.SeverityWarning, "A counter read but whose increment_when is false."},
	{policy.CodeMissingReason, policy.SeverityWarning, "Block, halt or ask with neither reason nor message."},
	{policy.CodeCostOverBudget, policy.SeverityWarning, "An expression whose worst-case cost exceeds the budget."},
	{policy.CodeDuplicateCondition, policy.SeverityWarning, "Two rules with the same condition, priority and phase, for tools both match: the later never decides there."},
	{policy.CodeInvalidSuppression, policy.SeverityWarning, "A # celguard:ignore comment naming a code that cannot be suppressed, or giving no reason."},
	{policy.CodeUnguardedArgument, policy.SeverityWarning, "A rule that matches every tool reads args.X without has(args.X): calls without X fail and the failure policy decides."},
	{policy.CodeToolsPhaseNotMCP, policy.SeverityWarning, "A tools-phase rule names a tool that is not an MCP tool: only the MCP proxy decides which tools a client is shown, so the rule hides nothing."},
	{policy.CodeCrossLayerShadowed, policy.SeverityWarning, "A rule that can never decide: a rule of another layer, tried first, always decides."},
	{policy.CodeUntrustedWouldRelax, policy.SeverityInfo, "An untrusted project's rule that, once trusted, would decide before a stricter rule."},
	{policy.CodeUnknownBuiltin, policy.SeverityError, "A test suite's builtin:NAME names no built-in bundle or policy."},
}
