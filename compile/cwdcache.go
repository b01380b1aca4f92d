package compile

import (
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/celenv"
)

// cwdOnly reports whether an expression whose reads are ei is a function
// of the working directory alone (or of nothing: a constant), so that its
// value can be kept across calls made in one directory: it reads no
// built-in variable but cwd, no result and no counters, and the
// environment's functions are all deterministic in their arguments.
// celguard's own environment (a non-empty Identity: no library of an
// embedder's, whose functions may read anything) is, except path.abs when
// it resolves symbolic links on disk.
func (c *compiler) cwdOnly(ei exprInfo) bool {
	env := c.cfg.env
	if env.Identity() == "" || env.Stdlib().Symlinks() || ei.result || ei.counters {
		return false
	}
	return ei.builtins&^(1<<builtinIndex[celenv.VarCwd]) == 0
}

// plainType reports whether values of type t are plain data (booleans,
// numbers, strings, bytes, and lists and maps of them), which no reader
// changes: a value kept across calls is read by concurrent decisions, and
// the stdlib's objects (a parsed shell command) fill their fields as they
// are read.
func plainType(t *cel.Type) bool {
	switch t.Kind() {
	case types.BoolKind, types.IntKind, types.UintKind, types.DoubleKind, types.StringKind, types.BytesKind:
		return true
	case types.ListKind, types.MapKind:
		for _, p := range t.Parameters() {
			if !plainType(p) {
				return false
			}
		}
		return true
	}
	return false
}

// maxCwdValues bounds the working directories whose values one variable
// keeps; past it the kept values are dropped and kept again as calls come.
const maxCwdValues = 64

// cwdValues keeps the values of a variable that depends on the working
// directory alone (Variable.CwdValue), by directory. It is safe for
// concurrent use.
type cwdValues struct {
	mu   sync.Mutex
	vals map[string]ref.Val
}

func (c *cwdValues) get(cwd string) (ref.Val, bool) {
	c.mu.Lock()
	v, ok := c.vals[cwd]
	c.mu.Unlock()
	return v, ok
}

func (c *cwdValues) put(cwd string, v ref.Val) {
	c.mu.Lock()
	if c.vals == nil || len(c.vals) >= maxCwdValues {
		c.vals = make(map[string]ref.Val, 4)
	}
	c.vals[cwd] = v
	c.mu.Unlock()
}

// CwdOnly reports whether the variable's value depends on nothing but the
// call's working directory: its expression reads no other built-in
// variable (directly or through other variables), no result, no counters,
// every function it may call is deterministic, and its type is plain data
// (strings, numbers, lists and maps of them). Its value is then kept
// across calls by directory (CwdValue, KeepCwdValue), and a decision that
// needs it again in the same directory does not evaluate it again.
func (v *Variable) CwdOnly() bool { return v.cwd != nil }

// CwdValue returns the value kept for the working directory cwd
// (KeepCwdValue), if any; never one for a variable that is not CwdOnly.
func (v *Variable) CwdValue(cwd string) (ref.Val, bool) {
	if v.cwd == nil {
		return nil, false
	}
	return v.cwd.get(cwd)
}

// KeepCwdValue keeps val, the variable's value evaluated for a call in
// the working directory cwd, for the later calls in that directory. It
// keeps nothing for a variable that is not CwdOnly, nor an error (an
// interrupted evaluation is evaluated again).
func (v *Variable) KeepCwdValue(cwd string, val ref.Val) {
	if v.cwd == nil || val == nil || types.IsError(val) || types.IsUnknown(val) {
		return
	}
	v.cwd.put(cwd, val)
}
