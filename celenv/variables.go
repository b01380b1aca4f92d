package celenv

import (
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// Names of the built-in variables (renaming one is a breaking change).
const (
	VarTool     = "tool"
	VarArgs     = "args"
	VarCwd      = "cwd"
	VarPhase    = "phase"
	VarCounters = "counters"
	VarResult   = "result"
	VarSession  = "session"
	VarClasses  = "classes"
	VarCommand  = "command"
	VarPaths    = "paths"
	VarCall     = "call"
	VarAgent    = "agent"
	VarMessages = "messages"
	VarOutput   = "output"
	// VarDefinition is the tools phase's tool definition.
	VarDefinition = "definition"
	// VarResource is the resource phase's read.
	VarResource = "resource"
)

// Variable is one built-in variable: what a rule sees under Name.
type Variable struct {
	Name string
	// Type is its CEL type.
	Type *cel.Type
	// Doc says what it holds.
	Doc string
	// Size says whether its value counts toward a call's input size.
	Size Size
	// Phases are the phases whose rules may read it; nil is every phase.
	// Reading it elsewhere is a compile error (compile's references).
	Phases []policy.Phase
}

// In reports whether rules of phase may read v.
func (v Variable) In(phase policy.Phase) bool {
	return v.Phases == nil || slices.Contains(v.Phases, phase)
}

// Lookup returns the built-in variable called name.
func Lookup(name string) (Variable, bool) {
	i := slices.IndexFunc(variables, func(v Variable) bool { return v.Name == name })
	if i < 0 {
		return Variable{}, false
	}
	return variables[i], true
}

// The phases of the variables that only some phases have.
var (
	callPhases   = []policy.Phase{policy.PhaseBefore, policy.PhaseAfter, policy.PhaseTurnEnd} // a call's (empty at turn end)
	toolPhases   = []policy.Phase{policy.PhaseBefore, policy.PhaseAfter, policy.PhaseTurnEnd, policy.PhaseTools}
	resultPhases = []policy.Phase{policy.PhaseAfter}
)

// Size says whether a built-in variable's value counts toward the input
// size of a call: the size of the largest string, list or map among the
// call's inputs, which decides whether an expression may run without cost
// accounting (compile.Program.For). Every variable whose value has a size
// must be counted, or that proof is unsound; eval's tests check it.
type Size uint8

// Sizes of the built-in variables. The zero Size is no answer: a variable
// must say.
const (
	// Counted: the value (a string, list or map) counts, with everything
	// inside it.
	Counted Size = iota + 1
	// Unsized: the value is a number or a bool, which has no size.
	Unsized
)

// variables is the one table of the built-in variables: the CEL
// declarations, the reserved names and compile's inputs derive from it, and
// eval resolves and measures each entry (adding a variable is this entry,
// its name above, and eval's ResolveName and sizeOfVariable).
var variables = []Variable{
	{VarTool, cel.StringType, `the tool's name, e.g. "Bash" (in the tools phase: the tool shown, e.g. "mcp__fs__write_file")`, Counted, toolPhases},
	{VarArgs, cel.MapType(cel.StringType, cel.DynType), "the call's arguments", Counted, callPhases},
	{VarCwd, cel.StringType, "the agent's working directory", Counted, callPhases},
	{VarPhase, cel.StringType, `"before", "after", "turn_end", "input", "output", "tools" or "resource"`, Counted, nil},
	{VarCounters, cel.MapType(cel.StringType, cel.IntType), "each counter of the rule's policy, for this call's key (at turn end, input and output: its total over every key)", Counted, nil},
	{VarResult, cel.MapType(cel.StringType, cel.DynType), "after the call only: is_error, content, and what the host adds (exit_code, ...)", Counted, resultPhases},
	{VarSession, cel.MapType(cel.StringType, cel.DynType), "host metadata: agent, user, mode, ids; and the session's facts: labels (the labels rules added, sorted), label_calls (per label, the call that added it first: call, tool, rule, turn) recent (the last 16 calls, oldest first: seq, turn, call, tool, verdict, rule, code, digest, summary, ids, status), writes (the files rules' writes named, least recently written first: path, how, proven, call, tool, rule, turn; at most 48), unproven_writes (those not proven) and unproven_writes_evicted (an unproven write left writes or was never kept)", Counted, nil},
	{VarClasses, cel.ListType(cel.StringType), "the tool's classes (shell, file_read, ...), from the set's ToolClasses files", Counted, toolPhases},
	{VarCommand, cel.StringType, `the shell command, from the argument its class names (command_args); "" if none`, Counted, callPhases},
	{VarPaths, cel.ListType(cel.StringType), "the file paths, from the arguments its classes name (path_args), as written", Counted, callPhases},
	{VarCall, cel.MapType(cel.StringType, cel.StringType), `the call's identity: id, the host's call id ("" if it sends none)`, Counted, nil},
	{VarAgent, cel.MapType(cel.StringType, cel.DynType), `the agent that made the call: name ("" if unknown) and ids, a map of the host's ids for it`, Counted, nil},
	{VarMessages, cel.ListType(cel.MapType(cel.StringType, cel.StringType)), `input phase only: the messages about to be sent to the model, in order, each with role ("user", "system", ...), content and name ("" if none)`, Counted, []policy.Phase{policy.PhaseInput}},
	{VarOutput, cel.MapType(cel.StringType, cel.DynType), "output phase only: the model's output, text (a string) and content (its structured content, or null)", Counted, []policy.Phase{policy.PhaseOutput}},
	{VarDefinition, cel.MapType(cel.StringType, cel.DynType), `tools phase only: the tool's definition as its server gives it: name (the server's name for it), title, description (strings, "" if none) and input_schema (its JSON Schema, a map)`, Counted, []policy.Phase{policy.PhaseTools}},
	{VarResource, cel.MapType(cel.StringType, cel.DynType), `resource phase only: the read: server (the MCP server's name), kind ("resource" or "prompt"), uri (a resource's URI, "" for a prompt), name (a prompt's name, "" for a resource) and arguments (a prompt's arguments, a map of strings)`, Counted, []policy.Phase{policy.PhaseResource}},
}

// Variables returns the built-in variables, in declaration order. The slice
// must not be modified.
func Variables() []Variable { return variables }

// declarations are the CEL declarations of the built-in variables.
func declarations() []cel.EnvOption {
	out := make([]cel.EnvOption, 0, len(variables))
	for _, v := range variables {
		out = append(out, cel.Variable(v.Name, v.Type))
	}
	return out
}

// ReservedNames are the identifiers a policy variable may not take: the
// built-in variables and the namespaces of the stdlib's libraries (shell,
// path, ...).
func ReservedNames() []string { return slices.Clone(reservedNames()) }

var reservedNames = sync.OnceValue(func() []string {
	names := make([]string, 0, len(variables)+8)
	for _, v := range variables {
		names = append(names, v.Name)
	}
	return append(names, stdlibNamespaces()...)
})

// stdlibNamespaces reads the stdlib's namespaces from the names of its
// libraries (celguard.lib.<namespace>), which stdlib.LibraryNames gives
// without building an environment (a second CEL environment in every
// process that compiles, 0.7% of a first in-process call's CPU).
func stdlibNamespaces() []string {
	var out []string
	for _, l := range stdlib.LibraryNames() {
		if ns, ok := strings.CutPrefix(l, stdlibPrefix); ok {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// stdlibPrefix starts the names of the stdlib's libraries.
const stdlibPrefix = "celguard.lib."
