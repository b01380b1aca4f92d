package stdlib

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"github.com/celguard/celguard/stdlib/shell"
)

// CallScope is the per-call memo of the late-bound stdlib functions
// (shell.parse, shell.commands, shell.programs, secrets.find, secrets.has,
// secrets.redact). Within one scope each distinct argument is parsed or
// scanned once, however many rules and expressions ask, and the same CEL
// value is returned each time.
//
// A CallScope is used by one goroutine at a time. Make one per tool call with
// Lib.NewCallScope, or Reset a pooled one between calls. The evaluator's
// activation implements cel.FunctionActivation by delegating ResolveFunction
// to the scope; Activation and Functions do that for simple embeddings.
type CallScope struct {
	l       *Lib
	shell   map[string]*shellEntry
	secrets map[string][]secretFinding

	// Counters, for tests and metrics.
	parses, scans int

	fnParse, fnCommands, fnPrograms  functions.LateBoundOp
	fnSecFind, fnSecHas, fnSecRedact functions.LateBoundOp
}

type shellEntry struct {
	parse                   *shell.Line
	val, commands, programs ref.Val
	// served says which of val, commands and programs were returned
	// before in this scope: later calls return them marked as memoised
	// (memoised), and cost only a lookup.
	served [3]bool
}

// memoisedList is a list a CallScope returned before for the same argument:
// the same list, which the runtime cost accounting charges as a lookup
// (actualCost), since the parse it stands for was paid for by the first
// call. Without it, every rule reading shell.commands(command) of a 200 kB
// command paid 600,000 of its 1,000,000 budget for a parse done once.
type memoisedList struct{ traits.Lister }

// memoised reports whether v is a value a CallScope returned before.
func memoised(v ref.Val) bool {
	switch x := v.(type) {
	case memoisedList:
		return true
	case *objVal:
		return x.memo
	}
	return false
}

func newCallScope(l *Lib) *CallScope {
	s := &CallScope{l: l}
	s.fnParse = func(_ string, args ...ref.Val) ref.Val { return s.shellVal(args, 0) }
	s.fnCommands = func(_ string, args ...ref.Val) ref.Val { return s.shellVal(args, 1) }
	s.fnPrograms = func(_ string, args ...ref.Val) ref.Val { return s.shellVal(args, 2) }
	s.fnSecFind = func(_ string, args ...ref.Val) ref.Val { return s.secretsVal(args, 0) }
	s.fnSecHas = func(_ string, args ...ref.Val) ref.Val { return s.secretsVal(args, 1) }
	s.fnSecRedact = func(_ string, args ...ref.Val) ref.Val { return s.secretsVal(args, 2) }
	return s
}

// Lib returns the stdlib the scope memoises for.
func (s *CallScope) Lib() *Lib { return s.l }

// ResolveFunction returns the scope's implementation of a late-bound stdlib
// function, by its CEL name. It implements the function half of
// cel.FunctionActivation.
func (s *CallScope) ResolveFunction(name string) (functions.LateBoundOp, bool) {
	switch name {
	case "shell.parse":
		return s.fnParse, true
	case "shell.commands":
		return s.fnCommands, true
	case "shell.programs":
		return s.fnPrograms, true
	case "secrets.find":
		return s.fnSecFind, true
	case "secrets.has":
		return s.fnSecHas, true
	case "secrets.redact":
		return s.fnSecRedact, true
	}
	return nil, false
}

// Reset forgets everything memoised, so a pooled scope can serve another call.
func (s *CallScope) Reset() {
	clear(s.shell)
	clear(s.secrets)
	s.parses, s.scans = 0, 0
}

// Functions returns the late-bound implementations as a map, for
// cel.FunctionVars(vars, scope.Functions()).
func (s *CallScope) Functions() map[string]cel.LateBoundFunction {
	out := map[string]cel.LateBoundFunction{}
	for _, n := range lateBoundNames {
		fn, _ := s.ResolveFunction(n)
		out[n] = fn
	}
	return out
}

var lateBoundNames = []string{"shell.parse", "shell.commands", "shell.programs", "secrets.find", "secrets.has", "secrets.redact"}

// Activation returns an activation over vars (an interpreter.Activation or a
// map[string]any) whose late-bound functions are the scope's.
func (s *CallScope) Activation(vars any) (cel.Activation, error) {
	a, err := interpreter.NewActivation(vars)
	if err != nil {
		return nil, err
	}
	return scopeActivation{Activation: a, s: s}, nil
}

type scopeActivation struct {
	interpreter.Activation
	s *CallScope
}

func (a scopeActivation) ResolveFunction(name string) (functions.LateBoundOp, bool) {
	return a.s.ResolveFunction(name)
}

// Shell returns the memoised parse of a command (the Go form of shell.parse).
func (s *CallScope) Shell(cmd string) *shell.Line { return s.shellEntry(cmd).parse }

func (s *CallScope) shellEntry(cmd string) *shellEntry {
	if e, ok := s.shell[cmd]; ok {
		return e
	}
	if s.shell == nil {
		s.shell = map[string]*shellEntry{}
	}
	s.parses++
	p := shell.Parse(cmd)
	e := &shellEntry{parse: p}
	e.val, e.commands, e.programs = parseToVal(p)
	s.shell[cmd] = e
	return e
}

func (s *CallScope) shellVal(args []ref.Val, which int) ref.Val {
	if len(args) != 1 {
		return types.NewErr("shell: expected one argument")
	}
	cmd, ok := args[0].(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[0])
	}
	e := s.shellEntry(string(cmd))
	v := [3]ref.Val{e.val, e.commands, e.programs}[which]
	if !e.served[which] {
		e.served[which] = true
		return v
	}
	switch x := v.(type) {
	case *objVal:
		again := *x
		again.memo = true
		return &again
	case traits.Lister:
		return memoisedList{x}
	}
	return v
}

func (s *CallScope) findings(text string) []secretFinding {
	if f, ok := s.secrets[text]; ok {
		return f
	}
	if s.secrets == nil {
		s.secrets = map[string][]secretFinding{}
	}
	s.scans++
	f := findSecrets(text)
	s.secrets[text] = f
	return f
}

func (s *CallScope) secretsVal(args []ref.Val, which int) ref.Val {
	if len(args) != 1 {
		return types.NewErr("secrets: expected one argument")
	}
	text, ok := args[0].(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[0])
	}
	f := s.findings(string(text))
	switch which {
	case 0:
		return findingsToVal(string(text), f)
	case 1:
		return types.Bool(len(f) > 0)
	default:
		return types.String(redactWith(string(text), f))
	}
}
