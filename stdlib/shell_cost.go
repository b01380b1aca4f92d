package stdlib

import (
	"cel.dev/cel-go/common/cost"

	"github.com/celguard/celguard/stdlib/shell"
)

// Size bounds of the shell functions' results, for static cost estimation.
//
// They are shell.SizeBounds, which Parse guarantees (it cuts a Line down to
// them and marks it opaque when expansions exceed them; see shell.Bounds).
// For a command string of at most n code points (of at most shell.MaxInput
// bytes only that many are parsed):
//
//   - commands: at most n/2+1 ("a;a;a" is the densest string), and never
//     more than shell.MaxCommands; as many opaque_reasons and programs;
//   - words of one command (argv, args, operands, positionals, argv_dynamic,
//     env, wrappers, a wrapper's argv): at most n/2+1, one byte and a
//     separator each;
//   - redirects of one command: as many, plus the redirects it inherits from
//     enclosing compound commands (at most shell.MaxInheritedRedirects);
//   - upstream programs of one command: at most the number of commands;
//   - a string (program, path, text, a word, an env name or value, a
//     redirect's fields, a wrapper's program): at most n code points, and a
//     message (error, an opaque reason) n plus shell.MessageExtra;
//   - via: at most 10 ("find -exec").
//
// The bounds hold for each command separately, so a loop over the words of
// every command is estimated as commands × words: the estimate of a nested
// loop stays quadratic in n, as cel-go multiplies sizes. A loop that visits
// each command once is charged ShellCommandShare per command instead, from
// the bounds on the sum over all the commands.

// shellCommandKeys bounds the keys of a command map: their number and the
// length of the shortest and longest ("env", "argv_dynamic").
var shellCommandKeys = struct{ n, minLen, maxLen uint64 }{n: 17, minLen: 3, maxLen: 12}

// ShellResultSize returns the size bound of the value function
// ("shell.parse", "shell.commands" or "shell.programs") returns for a
// command string of at most n bytes, or of the part of it reached by path:
// a sequence of "@items" (a list's elements), "@values" and "@keys" (a
// map's), and field names (a command's "args", a redirect's "target", the
// parse's "commands"). The estimate's Elem and Key bound the elements and
// keys below it. ok is false for another function or a path the result does
// not have. An unknown n (math.MaxUint64) is bounded by shell.MaxInput, as
// only that many bytes are parsed.
func ShellResultSize(function string, path []string, n uint64) (est cost.SizeEstimate, ok bool) {
	b := shellBounds(n)
	var node shellNode
	switch function {
	case "shell.parse":
		node = b.parse()
	case "shell.commands":
		node = b.commands()
	case "shell.programs":
		node = shellNode{est: b.programs()}
	default:
		return cost.SizeEstimate{}, false
	}
	for _, step := range path {
		if node, ok = node.child(step); !ok {
			return cost.SizeEstimate{}, false
		}
	}
	return node.est, true
}

type shellSizes struct {
	cmds, words, str, msg uint64
	// wordsTotal and redirectsTotal bound the sums over all the commands
	// (see ShellCommandShare).
	wordsTotal, redirectsTotal uint64
}

func shellBounds(n uint64) shellSizes {
	b := shell.SizeBounds(int(min(n, shell.MaxInput)))
	return shellSizes{cmds: uint64(b.Commands), words: uint64(b.Words), str: uint64(b.String), msg: uint64(b.Message),
		wordsTotal: uint64(b.WordsTotal), redirectsTotal: uint64(b.RedirectsTotal)}
}

// shellNode is a value whose parts are known by name (a parse result, a
// command) or by position (the list of commands), or, below them, a plain
// estimate whose Elem and Key describe its parts.
type shellNode struct {
	est    cost.SizeEstimate
	fields func(string) (shellNode, bool)
	items  *shellNode
}

func (n shellNode) child(step string) (shellNode, bool) {
	switch {
	case step == "@items" && n.items != nil:
		return *n.items, true
	case n.fields != nil && step != "@items" && step != "@values" && step != "@keys" && step != "@indices":
		return n.fields(step)
	}
	switch step {
	case "@items", "@values":
		if n.est.Elem != nil {
			return shellNode{est: *n.est.Elem}, true
		}
	case "@keys":
		if n.est.Key != nil {
			return shellNode{est: *n.est.Key}, true
		}
	case "@indices":
		return shellNode{est: cost.FixedSizeEstimate(1)}, true
	default: // a field of a map whose values are alike (a redirect, a wrapper)
		if n.est.Key != nil && n.est.Elem != nil {
			return shellNode{est: *n.est.Elem}, true
		}
	}
	return shellNode{}, false
}

func (b shellSizes) list(size uint64, elem cost.SizeEstimate) cost.SizeEstimate {
	return cost.ListSizeEstimate(cost.RangedSizeEstimate(0, size), elem)
}

func (b shellSizes) strMap(size, keyLen, valLen uint64) cost.SizeEstimate {
	return cost.MapSizeEstimate(cost.RangedSizeEstimate(0, size), cost.RangedSizeEstimate(0, keyLen), cost.RangedSizeEstimate(0, valLen))
}

func (b shellSizes) scalar() cost.SizeEstimate { return cost.FixedSizeEstimate(1) }

func (b shellSizes) text() cost.SizeEstimate { return cost.RangedSizeEstimate(0, b.str) }

func (b shellSizes) wordList() cost.SizeEstimate { return b.list(b.words, b.text()) }

// commandField bounds one field of a command map.
func (b shellSizes) commandField(name string) (cost.SizeEstimate, bool) {
	switch name {
	case "program", "path", "subcommand", "text":
		return b.text(), true
	case "via":
		return cost.RangedSizeEstimate(0, 10), true // "find -exec"
	case "argv", "args", "operands", "positionals":
		return b.wordList(), true
	case "argv_dynamic":
		return b.list(b.words, b.scalar()), true
	case "dynamic", "depth", "background":
		return b.scalar(), true
	case "env":
		return b.strMap(b.words, b.str, b.str), true
	case "upstream":
		return b.list(b.cmds, b.text()), true
	case "redirects":
		// op, fd, target, dynamic, body; the body of a here-document is
		// part of the input.
		return b.list(b.words+shell.MaxInheritedRedirects, cost.MapSizeEstimate(cost.FixedSizeEstimate(5),
			cost.RangedSizeEstimate(2, 7), b.text())), true
	case "wrappers":
		// program and argv: the union of a string and a word list.
		v := b.text()
		v.Max = max(v.Max, b.words)
		wl := b.wordList()
		v.Elem = wl.Elem
		return b.list(b.words, cost.MapSizeEstimate(cost.FixedSizeEstimate(2), cost.RangedSizeEstimate(4, 7), v)), true
	}
	return cost.SizeEstimate{}, false
}

func (b shellSizes) command() shellNode {
	// The estimate of a command as a map(string, dyn): its values are the
	// union of its fields.
	var val *cost.SizeEstimate
	for _, k := range commandKeys {
		f, _ := b.commandField(k)
		if val == nil {
			val = &f
			continue
		}
		u := val.Union(f)
		val = &u
	}
	k := shellCommandKeys
	est := cost.MapSizeEstimate(cost.FixedSizeEstimate(k.n), cost.RangedSizeEstimate(k.minLen, k.maxLen), *val)
	return shellNode{est: est, fields: func(name string) (shellNode, bool) {
		f, ok := b.commandField(name)
		return shellNode{est: f}, ok
	}}
}

func (b shellSizes) commands() shellNode {
	cmd := b.command()
	return shellNode{est: b.list(b.cmds, cmd.est), items: &cmd}
}

// programs bounds the list of programs, one per command at most.
func (b shellSizes) programs() cost.SizeEstimate { return b.list(b.cmds, b.text()) }

// parse bounds the map shell.parse returns: ok, error, opaque,
// opaque_reasons, commands and programs.
func (b shellSizes) parse() shellNode {
	cmds := b.commands()
	msg := cost.RangedSizeEstimate(0, b.msg)
	reasons := b.list(b.cmds, msg)
	programs := b.programs()
	val := cmds.est.Union(reasons).Union(programs).Union(msg)
	est := cost.MapSizeEstimate(cost.FixedSizeEstimate(6), cost.RangedSizeEstimate(2, 14), val)
	return shellNode{est: est, fields: func(name string) (shellNode, bool) {
		switch name {
		case "ok", "opaque":
			return shellNode{est: b.scalar()}, true
		case "error":
			return shellNode{est: msg}, true
		case "opaque_reasons":
			return shellNode{est: reasons}, true
		case "commands":
			return cmds, true
		case "programs":
			return shellNode{est: programs}, true
		}
		return shellNode{}, false
	}}
}

// shellResult is the result size of a shell function's cost model.
func shellResult(function string) func(cost.SizeEstimate) *cost.SizeEstimate {
	return func(in cost.SizeEstimate) *cost.SizeEstimate {
		s, _ := ShellResultSize(function, nil, in.Max)
		return &s
	}
}

// ShellCommandShare returns, for a field of a command that holds words
// (argv, args, operands, positionals, argv_dynamic, env) or redirects, a
// bound on the sum of the field's sizes over all the commands of a string
// of at most n code points, divided by the bound on the number of commands:
// the size to charge per command when each command of the string is visited
// once (commands × share bounds the sum). The sums are
// shell.Bounds.WordsTotal and RedirectsTotal, which Parse guarantees: the
// words of a command are its own bytes, so each nesting level (bash -c,
// eval, $( ), find -exec) holds at most n/2+1 of them, and a command
// inherits at most shell.MaxInheritedRedirects redirects. ok is false for
// the other fields: the sum of upstream is quadratic (a|a|a gives each stage
// every earlier one).
func ShellCommandShare(field string, n uint64) (share uint64, ok bool) {
	b := shellBounds(n)
	var sum uint64
	switch field {
	case "argv", "args", "operands", "positionals", "argv_dynamic", "env":
		sum = b.wordsTotal
	case "redirects":
		sum = b.redirectsTotal
	default:
		return 0, false
	}
	return (sum + b.cmds - 1) / b.cmds, true
}
