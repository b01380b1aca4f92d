package eval

import (
	"math"
	"time"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
)

// inputSize is the largest size of any string (in bytes, never fewer than
// its code points), list or map among the call's inputs, and inside them:
// what compile.Program.For needs to choose the program without cost
// accounting. The inputs are the built-in variables of celenv's table, each
// measured by sizeOfVariable, so none is forgotten. Past
// compile.MaxProvenInput the exact figure does not matter, so the walk
// stops there. Computed once per call (again after a rewrite).
func (ev *evaluation) inputSize() uint64 {
	if ev.size != 0 {
		return ev.size - 1
	}
	var m uint64
	for _, v := range celenv.Variables() {
		if v.Size == celenv.Counted {
			m = ev.sizeOfVariable(v.Name, m)
		}
	}
	ev.size = m + 1
	return m
}

// sizeOfVariable returns the larger of m and the size of the built-in
// variable name for this call. A variable it does not know is unbounded, so
// no program runs without cost accounting until it learns it
// (TestEveryVariableIsSized).
func (ev *evaluation) sizeOfVariable(name string, m uint64) uint64 {
	switch name {
	case celenv.VarTool:
		return max(m, uint64(len(ev.call.Tool)))
	case celenv.VarCwd:
		return max(m, uint64(len(ev.call.Cwd)))
	case celenv.VarPhase:
		return max(m, uint64(len(ev.phase.String())))
	case celenv.VarClasses:
		classes := ev.toolClasses()
		m = max(m, uint64(len(classes)))
		for _, c := range classes {
			m = max(m, uint64(len(c)))
		}
		return m
	case celenv.VarCommand, celenv.VarPaths:
		// They come from the arguments the tool's classes name; without
		// such classes they are empty (and not worth deriving).
		if ev.derived == nil && !ev.hasDerivedArgs(ev.toolClasses()) {
			return m
		}
		d := ev.derive()
		if name == celenv.VarCommand {
			return max(m, uint64(len(d.command)))
		}
		return sizeOf(d.paths, m)
	case celenv.VarArgs:
		return sizeOf(ev.call.Args, m)
	case celenv.VarCall:
		return max(m, uint64(len(ev.call.ID)), 2) // {"id": ...}
	case celenv.VarAgent:
		return sizeOf(ev.call.Agent.IDs, max(m, uint64(len(ev.call.Agent.Name)), 4)) // {"name": ..., "ids": {...}}
	case celenv.VarMessages:
		if ev.io == nil {
			return m
		}
		m = max(m, uint64(len(ev.io.messages)), 3) // each {"role", "content", "name"}
		for _, msg := range ev.io.messages {
			m = max(m, uint64(len(msg.Role)), uint64(len(msg.Content)), uint64(len(msg.Name)))
		}
		return m
	case celenv.VarOutput:
		if ev.io == nil || ev.io.output == nil {
			return m
		}
		return sizeOf(ev.io.output.Content, max(m, uint64(len(ev.io.output.Text)), 2)) // {"text", "content"}
	case celenv.VarDefinition:
		if ev.io == nil || ev.io.tool == nil {
			return m
		}
		return sizeOf(definitionValue(ev.io.tool), m)
	case celenv.VarResource:
		if ev.io == nil || ev.io.resource == nil {
			return m
		}
		r := ev.io.resource
		m = max(m, 5, uint64(len(r.Arguments))) // {"server", "kind", "uri", "name", "arguments"}
		for k, v := range r.Arguments {
			m = max(m, uint64(len(k)), uint64(len(v)))
		}
		return max(m, uint64(len(r.Server)), uint64(len(r.Kind)), uint64(len(r.URI)), uint64(len(r.Name)))
	case celenv.VarSession:
		return sizeOf(ev.s.sessionValue(), m)
	case celenv.VarResult:
		if ev.result == nil {
			return m
		}
		return sizeOf(ev.result, m)
	case celenv.VarCounters:
		// Counts are ints; the map's size is bounded by the set.
		return max(m, ev.set.CountersSize())
	}
	return math.MaxUint64
}

// sizeOf returns the larger of m and the size of v and of every value
// inside it. A value of a type it does not know is unbounded.
func sizeOf(v any, m uint64) uint64 {
	if m > compile.MaxProvenInput {
		return m
	}
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64,
		time.Time, time.Duration:
		return m
	case string:
		return max(m, uint64(len(x)))
	case []byte:
		return max(m, uint64(len(x)))
	case []string:
		m = max(m, uint64(len(x)))
		for _, s := range x {
			m = max(m, uint64(len(s)))
		}
		return m
	case []any:
		m = max(m, uint64(len(x)))
		for _, e := range x {
			if m = sizeOf(e, m); m > compile.MaxProvenInput {
				return m
			}
		}
		return m
	case map[string]any:
		m = max(m, uint64(len(x)))
		for k, e := range x {
			m = max(m, uint64(len(k)))
			if m = sizeOf(e, m); m > compile.MaxProvenInput {
				return m
			}
		}
		return m
	case map[string]string:
		m = max(m, uint64(len(x)))
		for k, e := range x {
			m = max(m, uint64(len(k)), uint64(len(e)))
		}
		return m
	}
	return math.MaxUint64
}

// hasDerivedArgs reports whether one of the classes names a command or path
// argument.
func (ev *evaluation) hasDerivedArgs(classes []string) bool {
	for _, name := range classes {
		if cl, ok := ev.set.Class(name); ok && (len(cl.CommandArgs) > 0 || len(cl.PathArgs) > 0 || ev.shaped && len(cl.ShapeArgs) > 0) {
			return true
		}
	}
	return false
}
