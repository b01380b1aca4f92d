package policy

import (
	"fmt"
	"strings"
	"time"
)

// APIVersion is the only apiVersion this release reads.
const APIVersion = "celguard.dev/v1"

// KindPolicy is the kind of a policy file.
const KindPolicy = "Policy"

// Policy is one parsed policy file. Only the parser builds it; after parsing
// it is read-only.
type Policy struct {
	File        string
	Pos         Pos // the start of the document
	Name        String
	Description string
	// Enforcement applies to every rule of the policy that does not set its
	// own (docs/layers.md). The zero value is EnforcementDefault; in the
	// admin layer a policy that says nothing is mandatory.
	Enforcement    Enforcement
	EnforcementPos Pos // where enforcement is written; zero when it is not
	// Metadata is copied into every decision of the policy's rules, under
	// the rule's own (Rule.Metadata wins on a shared key).
	Metadata map[string]string
	// Mode is ModeMonitor when the policy runs in shadow: its rules are
	// evaluated and their would-be verdicts reported, but they decide
	// nothing (eval's decide.go). The zero value enforces.
	Mode    Mode
	ModePos Pos // where mode is written; zero when it is not
	// DecisionLog says how the decision log writes the policy set's
	// decisions: which arguments it masks.
	DecisionLog DecisionLog
	Defaults    Defaults
	Variables   []Variable
	Counters    []Counter
	Rules       []Rule
	// Suppressions are the `# celguard:ignore` comments on its rules,
	// variables and counters.
	Suppressions []Suppression
}

// Mode says whether a policy's rules decide (enforce) or are only
// evaluated and reported (monitor).
type Mode uint8

// Modes.
const (
	ModeEnforce Mode = iota // the rules decide; the default
	ModeMonitor             // the rules are evaluated and reported, and decide nothing
)

// String returns "enforce" or "monitor".
func (m Mode) String() string {
	if m == ModeMonitor {
		return "monitor"
	}
	return "enforce"
}

// DecisionLog is a policy's part in how the decision log writes decisions.
type DecisionLog struct {
	// Mask lists the arguments whose values the log never writes.
	Mask []Mask
}

// Mask masks argument paths in the decision log, for every tool or for the
// tools named.
type Mask struct {
	Pos Pos
	// Tools are tool names or globs; empty means every tool.
	Tools []String
	// Paths are argument paths: keys separated by dots, each a key or *
	// (every key of a map, every element of a list), e.g. content, env.*,
	// files.*.content.
	Paths []MaskPath
}

// MaskPath is one parsed argument path.
type MaskPath struct {
	String
	// Segments are its keys, "*" for any.
	Segments []string
}

// ParseMaskPath parses an argument path: keys of letters, digits, _ and -,
// or *, separated by dots.
func ParseMaskPath(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("an argument path must not be empty")
	}
	segs := strings.Split(s, ".")
	for i, seg := range segs {
		if seg == "" {
			return nil, fmt.Errorf("argument path %q has an empty key at position %d (keys are separated by single dots)", s, i+1)
		}
		if seg == "*" {
			continue
		}
		for _, r := range seg {
			if !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				return nil, fmt.Errorf("argument path %q: key %q may hold only letters, digits, _ and -, or be * alone", s, seg)
			}
		}
	}
	return segs, nil
}

// String is a scalar with the position of its value.
type String struct {
	Value string
	Pos   Pos
}

// Defaults holds the policy-wide defaults.
type Defaults struct {
	// FailurePolicy says what a runtime error in a condition does; the zero
	// value is FailClosed.
	FailurePolicy FailurePolicy
	// Verdict, when set, is the verdict of a call no rule matches. Every
	// policy in a set that sets it must agree.
	Verdict    Verdict
	VerdictPos Pos
}

// Variable is a named CEL expression, evaluated lazily, at most once per call.
type Variable struct {
	Name String
	Expr Expr
}

// Scope is how long a counter's counts live, and who shares them.
type Scope uint8

// Counter scopes. The scopes past ScopeSession are shared: every session
// of the same agent, repository or organisation (read from the session's
// metadata) counts into one key space, kept in the state store so that a
// fleet of replicas shares it (state.Store).
const (
	ScopeTurn       Scope = iota // reset when a turn starts
	ScopeSession                 // kept for the whole session
	ScopeAgent                   // shared by the sessions of one agent (session meta "agent")
	ScopeRepository              // shared by the sessions in one repository (session meta "repository")
	ScopeOrg                     // shared by the sessions of one organisation (session meta "org")
)

// scopeNames are the scopes' names, by value.
var scopeNames = [...]string{"turn", "session", "agent", "repository", "org"}

// String returns "turn", "session", "agent", "repository" or "org".
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "turn"
}

// Shared reports whether the scope's counts are shared beyond one session
// (agent, repository, org).
func (s Scope) Shared() bool { return s >= ScopeAgent && int(s) < len(scopeNames) }

// ParseScope parses a scope's name.
func ParseScope(name string) (Scope, error) {
	for i, n := range scopeNames {
		if n == name {
			return Scope(i), nil
		}
	}
	return ScopeTurn, fmt.Errorf("scope must be turn, session, agent, repository or org, not %q", name)
}

// StoreErrorPolicy is what a counter does when the state store cannot be
// reached (state.Store).
type StoreErrorPolicy uint8

// Store error policies.
const (
	// StoreErrorClose (the default): a decision that reads or counts the
	// counter is a block with code store_unavailable.
	StoreErrorClose StoreErrorPolicy = iota
	// StoreErrorLocal: the counter counts on the replica's last known
	// state, for soft limits that should not stop the agents during an
	// outage.
	StoreErrorLocal
)

// String returns "close" or "local".
func (p StoreErrorPolicy) String() string {
	if p == StoreErrorLocal {
		return "local"
	}
	return "close"
}

// Counter counts events per key, for loop detection and rate limits.
type Counter struct {
	Name  String
	Scope Scope
	// Key is a CEL string expression over the call; nil counts every call under one key (eval.AllCallsKey).
	Key *Expr
	// IncrementWhen is a CEL bool expression evaluated when the counter
	// counts (Phase).
	IncrementWhen Expr
	// ResetWhen, when set, is a CEL bool expression evaluated when the
	// counter counts, that clears this call's key.
	ResetWhen *Expr
	// ResetAll makes reset_when clear every key of the counter (reset: all)
	// instead of this call's key only (reset: key, the default). ResetPos
	// is where reset is written.
	ResetAll bool
	ResetPos Pos
	// Weight, when set, is a CEL int expression: the weight an
	// increment adds (budgets of money, tokens or bytes) instead of 1. It
	// cannot combine with a window or a streak, which count events.
	Weight *Expr
	// Window, when positive, makes the counter count only the events of the
	// last Window (a sliding window).
	Window time.Duration
	// Streak, when set, is a CEL expression evaluated when the counter
	// counts: the
	// counter then counts consecutive increments of a key whose streak
	// value is the same; a different value restarts the count at 1 (for
	// "returned the same result again").
	Streak *Expr
	// Phase is when the counter counts: PhaseAfter (the parser's default)
	// after the call ran, with its result; PhaseBefore at the decision
	// before the call, counting the call only when that decision lets it
	// through, so its expressions cannot read `result`.
	Phase Phase
	// OnStoreError is what the counter does when the state store is
	// unreachable (on_store_error: close, the default, or local).
	OnStoreError StoreErrorPolicy
}

// Phase is when a rule runs.
type Phase uint8

// Phases.
const (
	PhaseBefore   Phase = iota // before the tool runs; the default
	PhaseAfter                 // after the tool ran, with its result
	PhaseTurnEnd               // when the agent's turn ends: no call, the turn's counters
	PhaseInput                 // the messages about to be sent to the model: no call, `messages`
	PhaseOutput                // the model's output before it is returned: no call, `output`
	PhaseTools                 // which tools a client is shown (MCP tools/list): the tool's name and `definition`, no call
	PhaseResource              // a read of an MCP resource or prompt: no call, `resource`
	// NumPhases is the number of phases.
	NumPhases = iota
)

// String returns "before", "after", "turn_end", "input", "output", "tools"
// or "resource".
func (p Phase) String() string {
	switch p {
	case PhaseTools:
		return "tools"
	case PhaseResource:
		return "resource"
	case PhaseAfter:
		return "after"
	case PhaseTurnEnd:
		return "turn_end"
	case PhaseInput:
		return "input"
	case PhaseOutput:
		return "output"
	}
	return "before"
}

// ParsePhase parses "before", "after", "turn_end", "input", "output",
// "tools" or "resource".
func ParsePhase(s string) (Phase, error) {
	switch s {
	case "tools":
		return PhaseTools, nil
	case "resource":
		return PhaseResource, nil
	case "before":
		return PhaseBefore, nil
	case "after":
		return PhaseAfter, nil
	case "turn_end":
		return PhaseTurnEnd, nil
	case "input":
		return PhaseInput, nil
	case "output":
		return PhaseOutput, nil
	}
	return PhaseBefore, fmt.Errorf("phase must be before, after, turn_end, input, output, tools or resource, not %q", s)
}

// HasCall reports whether the phase decides a tool call (before and after);
// turn_end, input, output, tools and resource rules have no call, so no
// args or cwd (a tools rule reads the tool's name and definition).
func (p Phase) HasCall() bool { return p == PhaseBefore || p == PhaseAfter }

// MarshalText implements encoding.TextMarshaler.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Phase) UnmarshalText(b []byte) error {
	v, err := ParsePhase(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Verdict is what a matching rule decides. The zero value is unspecified and
// never the verdict of a rule.
type Verdict uint8

// Verdicts.
const (
	VerdictUnspecified Verdict = iota
	Allow                      // the tool runs
	Warn                       // the tool runs; the host shows the warning
	Ask                        // an approver decides
	Modify                     // the call or its result is rewritten
	Block                      // the tool is skipped, or its result withheld
	Halt                       // the whole turn is aborted
)

var verdictNames = [...]string{"", "allow", "warn", "ask", "modify", "block", "halt"}

// String returns the verdict's name as written in policy files.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", v)
}

// Strictness ranks the verdict for the stricter of two decisions
// (docs/layers.md, rule 3): allow 0 < warn = modify 1 < ask 2 < block 3 <
// halt 4; VerdictUnspecified and unknown values are -1.
func (v Verdict) Strictness() int {
	switch v {
	case Allow:
		return 0
	case Warn, Modify:
		return 1
	case Ask:
		return 2
	case Block:
		return 3
	case Halt:
		return 4
	}
	return -1
}

// ParseVerdict parses a verdict name.
func ParseVerdict(s string) (Verdict, error) {
	for i, n := range verdictNames {
		if i > 0 && n == s {
			return Verdict(i), nil
		}
	}
	return VerdictUnspecified, fmt.Errorf("verdict must be one of allow, warn, block, halt, ask, modify, not %q", s)
}

// MarshalText implements encoding.TextMarshaler.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (v *Verdict) UnmarshalText(b []byte) error {
	p, err := ParseVerdict(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// FailurePolicy says what a runtime error in a rule's expressions does.
type FailurePolicy uint8

// Failure policies.
const (
	FailInherit FailurePolicy = iota // a rule without its own takes the policy's
	FailClosed                       // the call is blocked with code policy_error
	FailOpen                         // the rule does not match
)

// String returns "closed", "open" or "" for FailInherit.
func (f FailurePolicy) String() string {
	switch f {
	case FailClosed:
		return "closed"
	case FailOpen:
		return "open"
	}
	return ""
}

// Enforcement says whether a rule can be lifted by another layer
// (docs/layers.md). The zero value, EnforcementDefault, is what a policy or
// rule gets when it says nothing.
type Enforcement uint8

// Enforcements.
const (
	// EnforcementDefault: the rule takes its place in its layer's priority
	// order; a higher layer may replace or disable it.
	EnforcementDefault Enforcement = iota
	// EnforcementMandatory: the rule is tried before every other rule, and
	// no Overrides file or same-name policy or same-id rule of another
	// layer can lift it. Only block, halt, ask and warn rules may be
	// mandatory.
	EnforcementMandatory
)

// String returns "default" or "mandatory".
func (e Enforcement) String() string {
	if e == EnforcementMandatory {
		return "mandatory"
	}
	return "default"
}

// ParseEnforcement parses "mandatory" or "default".
func ParseEnforcement(s string) (Enforcement, error) {
	switch s {
	case "mandatory":
		return EnforcementMandatory, nil
	case "default":
		return EnforcementDefault, nil
	}
	return EnforcementDefault, fmt.Errorf("enforcement must be mandatory or default, not %q", s)
}

// Rule is one rule of a policy.
type Rule struct {
	ID          String
	Pos         Pos // the start of the rule's mapping
	Description string
	Priority    int
	Phase       Phase
	// Tools are exact tool names or globs, and Classes tool classes (see
	// ToolClasses); a rule matches a tool named in either. Both empty means
	// every tool.
	Tools   []String
	Classes []String
	// Condition is a CEL bool expression; nil means true.
	Condition *Expr
	Verdict   Verdict
	// VerdictPos is where the verdict is written.
	VerdictPos Pos
	// Reason is static text for the model and the user.
	Reason string
	// Message, when set, is a CEL string expression that overrides Reason.
	Message *Expr
	// Code is a machine-readable code for hosts and logs.
	Code          string
	FailurePolicy FailurePolicy
	Modify        *ModifySpec
	// Enforcement, when set, overrides the policy's for this rule.
	Enforcement    Enforcement
	EnforcementPos Pos // where enforcement is written; zero when it is not
	// Metadata (owner, ticket, severity...) is copied into the decisions
	// the rule makes, over the policy's Metadata.
	Metadata map[string]string
	// Judge names the judge (deployment configuration, docs/approvals.md)
	// that settles this ask rule's calls before a person is asked: it
	// answers allow, block or ask; anything else is the rule's ask.
	Judge    string
	JudgePos Pos
	// Labels are the session labels the rule adds (labels: {add: [...]})
	// when it decides a call, before or after it, with allow, warn or ask
	// (approved or not): what the session did, that later rules read as
	// session.labels (docs/policies.md, "Session facts"). LabelsPos is where
	// labels is written.
	Labels    []String
	LabelsPos Pos
	// Writes, when set, is a CEL list expression naming the files the call
	// writes, each a map with path, how (how it writes them: "file tool",
	// "redirect", "program", ...) and proven (whether their content was
	// proven safe). Before every call the rule applies to (its tools and
	// classes), whichever rule decides it, the engine evaluates it and, when
	// the call is not refused, records each in session.writes: an unproven
	// write marks its path, approved or not; a proven one clears the path's
	// mark when the call is let through. An untrusted project's writes are
	// not read (docs/policies.md, "Session facts").
	Writes *Expr
}

// MaxLabelLen bounds the length of a label a rule adds.
const MaxLabelLen = 64

// ModifySpec rewrites a call's arguments (before phase), its result content
// (after phase), the messages (input phase), the model's output (output
// phase) or a tool's description (tools phase).
type ModifySpec struct {
	Pos Pos
	// Args, when set, is a CEL map expression that replaces the arguments.
	Args *Expr
	// Set maps argument names to CEL expressions giving their new values.
	Set []SetArg
	// Unset removes arguments.
	Unset []String
	// Content, when set, is a CEL string expression giving the new result
	// content (after phase only).
	Content *Expr
	// Messages, when set, is a CEL list expression giving the new messages,
	// each a map with role, content and optionally name (input phase only).
	Messages *Expr
	// Output, when set, is a CEL expression giving the new output: a string
	// (the new text; structured content is dropped) or a map with text and
	// optionally content (output phase only).
	Output *Expr
	// Description, when set, is a CEL string expression giving the tool's
	// new description, as the client is shown it (tools phase only).
	Description *Expr
}

// SetArg is one entry of modify.set.
type SetArg struct {
	Key  String
	Expr Expr
}
