package shell

import (
	"slices"
	"unicode/utf8"
)

// Bounds are the size limits Parse guarantees on the Line it returns, in
// terms of the length n of the command string it parsed, counted in code
// points (the size CEL gives a string; never more than its bytes). Of a
// string longer than MaxInput bytes only the first MaxInput are parsed, and
// n is the length of that part.
//
// A plain command string keeps these bounds by construction: every command
// needs a byte of its own and a separator ("a;a;a" is the densest string),
// and so does every word. Expansions can break them: a variable assigned
// earlier in the same string and expanded later (x='a;a;a'; eval $x$x) or
// an expansion split into fields (x='a a a'; echo $x $x) yields more, and
// longer, commands and words than its own bytes. Parse therefore checks the
// Line against the bounds before returning it: past a bound the commands,
// words, redirections, assignments and wrappers are cut off and strings
// shortened, and the Line is Opaque with the reason ReasonOverBounds.
//
// stdlib's static cost model (stdlib/shell_cost.go, ShellResultSize and
// ShellCommandShare) relies on exactly these bounds to prove that a CEL
// expression over a parse stays under the cost limit without runtime cost
// accounting; they are defined here, once, for both.
type Bounds struct {
	// Commands bounds the commands of a Line, and its OpaqueReasons:
	// n/2+1, and never more than MaxCommands. It also bounds the Upstream
	// of each command.
	Commands int
	// Words bounds, for each command, its Argv (so also its Args, Operands,
	// Positionals and ArgvDynamic), its Env entries, its Wrappers and the
	// Argv of each wrapper: n/2+1.
	Words int
	// Redirects bounds the Redirects of each command: Words of its own
	// plus MaxInheritedRedirects of enclosing compound commands.
	Redirects int
	// String bounds, in code points, every string of a command: Program,
	// Path, Text, each word of Argv, the keys and values of Env, the fields
	// of each Redirect, each wrapper's Program and words, each entry of
	// Upstream: n.
	String int
	// Message bounds, in code points, Error and each of OpaqueReasons:
	// n plus MessageExtra.
	Message int
	// WordsTotal bounds the sum over all the commands of a Line of their
	// Argv, and the sum of their Env entries: Words for each of the
	// MaxDepth+1 nesting levels, whose scripts re-read the same bytes
	// (bash -c 'a a', find -exec, eval).
	WordsTotal int
	// RedirectsTotal bounds the sum over all the commands of their
	// Redirects: WordsTotal plus MaxInheritedRedirects for each command.
	RedirectsTotal int
}

// MessageExtra is how much longer than the command string an error message
// or an opaque reason may be.
const MessageExtra = 200

// ReasonOverBounds is the opaque reason of a Line that Parse cut down to
// its Bounds.
const ReasonOverBounds = "expansions make more commands or words than the command string holds; the rest is not analysed"

// SizeBounds returns the Bounds of the Line Parse returns for a command
// string of n code points (n is taken as MaxInput when larger).
func SizeBounds(n int) Bounds {
	n = min(max(n, 0), MaxInput)
	half := n/2 + 1
	b := Bounds{Commands: min(half, MaxCommands), Words: half, String: n, Message: n + MessageExtra}
	b.Redirects = b.Words + MaxInheritedRedirects
	b.WordsTotal = b.Words * (MaxDepth + 1)
	b.RedirectsTotal = b.WordsTotal + b.Commands*MaxInheritedRedirects
	return b
}

// enforceBounds cuts the Line down to b (see Bounds) and, if it had to,
// marks it Opaque with ReasonOverBounds. It writes into no slice or map a
// command may share with another: it replaces them.
func (l *Line) enforceBounds(b Bounds) {
	over := false
	words, envs, redirs := 0, 0, 0
	for i, c := range l.Commands {
		if i == b.Commands {
			l.Commands, over = l.Commands[:i], true
			break
		}
		if c.enforceBounds(b) {
			over = true
		}
		words += len(c.Argv)
		envs += len(c.Env)
		redirs += len(c.Redirects)
		if words > b.WordsTotal || envs > b.WordsTotal || redirs > b.RedirectsTotal {
			l.Commands, over = l.Commands[:i], true
			break
		}
	}
	var cut bool
	if l.Error, cut = clampString(l.Error, b.Message); cut {
		over = true
	}
	if l.OpaqueReasons, cut = clampStrings(l.OpaqueReasons, b.Commands, b.Message); cut {
		over = true
	}
	if over {
		l.Opaque = true
		if !slices.Contains(l.OpaqueReasons, ReasonOverBounds) {
			// The last of the b.Commands reasons says the Line is cut.
			kept := l.OpaqueReasons[:min(len(l.OpaqueReasons), b.Commands-1)]
			l.OpaqueReasons = append(slices.Clip(kept), ReasonOverBounds)
		}
	}
}

// enforceBounds cuts one command down to b and reports whether it had to.
func (c *Command) enforceBounds(b Bounds) bool {
	var cut [8]bool
	cut[0] = c.clampArgv(b)
	c.Program, cut[1] = clampString(c.Program, b.String)
	c.Path, cut[2] = clampString(c.Path, b.String)
	c.Text, cut[3] = clampString(c.Text, b.String)
	c.Upstream, cut[4] = clampStrings(c.Upstream, b.Commands, b.String)
	c.Env, cut[5] = clampEnv(c.Env, b)
	c.Redirects, cut[6] = clampRedirects(c.Redirects, b)
	c.Wrappers, cut[7] = clampWrappers(c.Wrappers, b)
	return slices.Contains(cut[:], true)
}

// clampArgv keeps the first b.Words words of the command and shortens each
// to b.String code points. A shortened word is not what the command runs:
// it is marked dynamic, and a shortened argv[0] is also the Path and the
// Program, as for any dynamic argv[0] that names no program.
func (c *Command) clampArgv(b Bounds) bool {
	cut := len(c.Argv) > b.Words
	argv, dyn := c.Argv[:min(len(c.Argv), b.Words)], c.ArgvDynamic[:min(len(c.ArgvDynamic), b.Words)]
	cloned, resolvedCloned := false, false
	for i, s := range argv {
		t, ok := clampString(s, b.String)
		if !ok {
			continue
		}
		if !cloned {
			argv, dyn, cloned = slices.Clone(argv), slices.Clone(dyn), true
		}
		argv[i], cut = t, true
		if i < len(dyn) {
			dyn[i] = true
		}
		if i < len(c.argvResolved) && c.argvResolved[i] {
			// A shortened word is no longer the variable's value.
			if !resolvedCloned {
				c.argvResolved, resolvedCloned = slices.Clone(c.argvResolved), true
			}
			c.argvResolved[i] = false
		}
		if i == 0 {
			c.Path, c.Program = t, t
		}
	}
	c.Argv, c.ArgvDynamic = argv, dyn
	return cut
}

// clampString returns s cut to at most max code points, and whether it
// was cut.
func clampString(s string, max int) (string, bool) {
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	i := 0
	for range max {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], true
}

// clampStrings returns ss with at most max entries of at most maxLen code
// points each, and whether it had to cut.
func clampStrings(ss []string, max, maxLen int) ([]string, bool) {
	return clampEach(ss, max, func(s string) (string, bool) { return clampString(s, maxLen) })
}

// clampEach returns s with at most max elements, each passed through
// clamp, and whether anything was cut; s itself is never written to.
func clampEach[T any](s []T, max int, clamp func(T) (T, bool)) ([]T, bool) {
	cut := len(s) > max
	if cut {
		s = s[:max]
	}
	var out []T
	for i, x := range s {
		if y, ok := clamp(x); ok {
			if out == nil {
				out = slices.Clone(s)
			}
			out[i], cut = y, true
		}
	}
	if out != nil {
		return out, cut
	}
	return s, cut
}

// clampEnv returns env with at most b.Words entries (the first in key
// order) whose keys and values have at most b.String code points.
func clampEnv(env map[string]string, b Bounds) (map[string]string, bool) {
	cut := len(env) > b.Words
	for k, v := range env {
		if cut {
			break
		}
		_, kc := clampString(k, b.String)
		_, vc := clampString(v, b.String)
		cut = kc || vc
	}
	if !cut {
		return env, false
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range env {
			if !yield(k) {
				return
			}
		}
	})
	out := make(map[string]string, min(len(keys), b.Words))
	for _, k := range keys[:min(len(keys), b.Words)] {
		ck, _ := clampString(k, b.String)
		out[ck], _ = clampString(env[k], b.String)
	}
	return out, true
}

// clampRedirects returns rs with at most b.Redirects redirections whose
// fields have at most b.String code points.
func clampRedirects(rs []Redirect, b Bounds) ([]Redirect, bool) {
	return clampEach(rs, b.Redirects, func(r Redirect) (Redirect, bool) {
		var c [4]bool
		r.Op, c[0] = clampString(r.Op, b.String)
		r.FD, c[1] = clampString(r.FD, b.String)
		r.Target, c[2] = clampString(r.Target, b.String)
		r.Body, c[3] = clampString(r.Body, b.String)
		r.bodySpans = nil // they index the whole Body
		return r, slices.Contains(c[:], true)
	})
}

// clampWrappers returns ws with at most b.Words wrappers, each with at most
// b.Words words, whose strings have at most b.String code points.
func clampWrappers(ws []Wrapper, b Bounds) ([]Wrapper, bool) {
	return clampEach(ws, b.Words, func(w Wrapper) (Wrapper, bool) {
		var pc, ac bool
		w.Program, pc = clampString(w.Program, b.String)
		w.Argv, ac = clampStrings(w.Argv, b.Words, b.String)
		return w, pc || ac
	})
}
