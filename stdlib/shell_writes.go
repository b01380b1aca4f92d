package stdlib

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/stdlib/shell"
)

// # shell.writes
//
// The words naming the files and directories a command writes, creates,
// truncates, moves, links, changes the mode of or deletes, as written
// (~, $HOME and globs kept; make them absolute with path.abs). A target is
// a glob pattern as the shell reads it: in a redirection and in the
// operands of a program that does not glob its own arguments (rm, cp,
// touch, tee, ...), a glob character the shell takes literally ('a*',
// "x(1)", a\[b) is written as a class of itself (a[*], x[(]1[)], a[[]b),
// so glob.couldMatch reads a quoted name as the one name it is. They come
// from its output redirections (> >> >| &> <> and >& to a file) and from a
// table of programs: rm, touch, truncate, chmod, tee... write every
// operand; cp, mv, ln, install and rsync the destination (and DEST/NAME
// for each source, should DEST be a directory, or DEST/** when that would
// repeat DEST past 64 KiB; mv and ln also the sources
// and SOURCE/**); sort -o, curl -o, wget -O, dd of=, go build -o, go test
// -coverprofile (and the other profiles), go install (GOBIN/NAME), tar -x
// -C DIR and unzip -d DIR (DIR/**), patch, git apply and apply_patch (the
// paths of the patch when the command shows it). Options are read as the
// program does: --opt=value and --opt value, clustered short options
// (-ro out, -oout), GNU abbreviations (--o, --outp for --output). A word
// naming a whole tree (rm -r, chmod -R, the source of mv) is also given as
// WORD/**. A program not in the table is taken to write every word that
// may name a file (its words, the part after = or :, the file-like tokens
// of an inline script), except programs that only read (cat, ls, grep,
// head, jq, ...), which write only through their redirections; so is every
// command of a string that did not parse. A shell's -c script is analysed
// as commands of its own.
//
//	shell.writes(<celguard.shell.Command>) -> <list(string)>
//	shell.writes(<map(string, dyn)>) -> <list(string)>
//
// Examples:
//
//	shell.writes(shell.commands("sort --o out.txt in")[0])       // ["out.txt"]
//	shell.writes(shell.commands("cp a b")[0])                   // ["b", "b/a"]
//	shell.writes(shell.commands("go build -o bin/ ./cmd/x")[0]) // ["bin/", "bin/x"]
//	shell.writes(shell.commands("cat x > y")[0])                // ["y"]
//
// Introduced in stdlib version 2.
func (l *Lib) shellWritesFns() []*fnDef {
	return []*fnDef{
		{ns: "shell", name: "shell.writes", version: 2, ovs: []*ovDef{{
			id: "shell_writes_command", args: []*cel.Type{shellCommandType}, result: listString,
			unary: shellWrites,
			// One pass over the command's words, memoised per command and
			// bounded by the parse's own cost per byte (the map's size
			// is its number of fields).
			cost: linearCost(30, 0, 1).withSize(shellWritesSize),
		}, {
			id: "shell_writes_map", args: []*cel.Type{mapStrDyn}, result: listString,
			unary: shellWrites,
			cost:  linearCost(30, 0, 1).withSize(shellWritesSize),
		}}},
	}
}

// shellWrites computes a command's writes once per command value: its
// work, one pass over the command's words, is then paid once per parse,
// whose cost (per byte of the command) already bounds it.
func shellWrites(cv ref.Val) ref.Val {
	memo, _ := cv.(*commandVal)
	if memo != nil && memo.writes != nil {
		return memo.writes
	}
	c, err := commandFromVal(cv)
	if err != nil {
		return err
	}
	w, _ := c.Writes()
	if w == nil {
		w = []string{}
	}
	out := types.NewStringList(adapter, w)
	if memo != nil {
		memo.writes = out
	}
	return out
}

// shellWritesSize bounds the result of shell.writes from the estimate of
// its command map, whose values (its fields) are at most n long for a
// command string of n bytes: at most 4n+4+shell.MaxInheritedRedirects
// targets (each word, its part after = or :, a glued option value, a
// DEST/NAME per source, a here-document's patch paths), each at most 3n+16
// bytes (a path joined to a name, GOBIN's default, "/**"; a glob character
// the shell takes literally escaped as a class of itself, [*]).
func shellWritesSize(args []cost.SizeEstimate) cost.SizeEstimate {
	n := uint64(shell.MaxInput)
	if len(args) > 0 && args[0].Elem != nil && args[0].Elem.Max < n {
		n = args[0].Elem.Max
	}
	return cost.ListSizeEstimate(cost.RangedSizeEstimate(0, 4*n+4+shell.MaxInheritedRedirects),
		cost.RangedSizeEstimate(0, 3*n+16))
}
