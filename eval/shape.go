package eval

import (
	"slices"

	"github.com/celguard/celguard/compile"
)

// Calls of tools that no class with arguments names are classed by the
// shape of their arguments (compile.PolicySet.ClassesFor, issue 15 point
// 1): their rules and derived arguments come from those classes.

// candidates are the rules that can match the call, in evaluation order.
func (ev *evaluation) candidates(untrusted bool) []*compile.Rule {
	if ev.toolClasses(); ev.shaped {
		return ev.set.CandidatesFor(ev.phase, ev.call.Tool, ev.classes, untrusted)
	}
	if untrusted {
		return ev.set.UntrustedCandidates(ev.phase, ev.call.Tool)
	}
	return ev.set.Candidates(ev.phase, ev.call.Tool)
}

// classArgs returns the arguments a class reads the command and the paths
// from: its own, and for a call classed by shape, its shape arguments too
// (for a class of paths, every argument whose name says it holds a path).
func (ev *evaluation) classArgs(cl *compile.Class) (commandArgs, pathArgs []string) {
	commandArgs, pathArgs = cl.CommandArgs, cl.PathArgs
	if !ev.shaped {
		return commandArgs, pathArgs
	}
	if len(commandArgs) > 0 {
		return append(slices.Clip(commandArgs), cl.ShapeArgs...), pathArgs
	}
	if len(pathArgs) > 0 {
		pathArgs = slices.Clip(pathArgs)
		keys := make([]string, 0, len(ev.call.Args))
		for k := range ev.call.Args {
			if cl.ShapeKey(k) && !slices.Contains(pathArgs, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		pathArgs = append(pathArgs, keys...)
	}
	return commandArgs, pathArgs
}
