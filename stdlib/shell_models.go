package stdlib

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/stdlib/shell"
)

// # shell.hazard
//
// The first word of a command that makes it run code, or act on places its
// words do not show, beyond what its program is trusted to do; "" when
// there is none. Each program with a model lists the options that do so,
// read as the program reads them (--opt=value, --opt value, clustered
// short options, GNU abbreviations such as --ev for --eval): rg --pre and
// --hostname-bin, sort --compress-program, make --eval/-E, -f - and
// assignments that run commands (X:=$(shell id), SHELL=...), go -toolexec,
// -exec, -vettool, go env -w, git -c, --exec-path and --config-env, git
// config that sets a value, git diff --ext-diff, git grep -O, git rebase
// -x, git submodule foreach, npm --script-shell, -g and exec, cargo
// --config and install, tar --checkpoint-action and -I, go run of a
// module path, pip --index-url and --target, awk programs with system(), a pipe,
// getline or >, sed scripts other than plain substitutions, deletions and
// prints, and interpreters given inline code or their stdin (python -c,
// node -e, bash -s, python -m other than the test and lint tools). A
// program without a model has no hazard of its own.
//
//	shell.hazard(<celguard.shell.Command>) -> <string>
//
// Examples:
//
//	shell.hazard(shell.commands("make --ev='$(shell id)'")[0]) // "--ev=$(shell id)"
//	shell.hazard(shell.commands("rg --pre ./x foo")[0])       // "--pre"
//	shell.hazard(shell.commands("go test ./...")[0])          // ""
//
// Introduced in stdlib version 3.
//
// # shell.dirs
//
// The directories a command works in besides the current one, as written:
// a cd or pushd operand (~ for a bare cd), and the values of git -C,
// --git-dir and --work-tree, make -C, go -C, env -C and --chdir (also as a
// wrapper), npm --prefix, pnpm -C, yarn --cwd, cargo -C and
// --manifest-path, uv --directory, poetry -C and tar -C.
//
//	shell.dirs(<celguard.shell.Command>) -> <list(string)>
//
// Examples:
//
//	shell.dirs(shell.commands("env -C ~/.kube cat config")[0]) // ["~/.kube"]
//
// Introduced in stdlib version 3.
func (l *Lib) shellModelFns() []*fnDef {
	return []*fnDef{
		{ns: "shell", name: "shell.hazard", version: 3, ovs: []*ovDef{{
			id: "shell_hazard_command", args: []*cel.Type{shellCommandType}, result: cel.StringType,
			unary: func(cv ref.Val) ref.Val {
				c, err := commandFromVal(cv)
				if err != nil {
					return err
				}
				return types.String(c.Hazard())
			},
			// One pass over the command's words, each matched against a
			// short table, and a linear regex over an awk or sed script.
			cost: linearCost(30, 0, 1).withSize(shellWordSize),
		}}},
		{ns: "shell", name: "shell.dirs", version: 3, ovs: []*ovDef{{
			id: "shell_dirs_command", args: []*cel.Type{shellCommandType}, result: listString,
			unary: func(cv ref.Val) ref.Val {
				c, err := commandFromVal(cv)
				if err != nil {
					return err
				}
				return types.NewStringList(adapter, c.Dirs())
			},
			cost: linearCost(30, 0, 1).withSize(shellDirsSize),
		}}},
	}
}

// shellWordSize bounds a word of a command of at most shell.MaxInput bytes.
func shellWordSize(args []cost.SizeEstimate) cost.SizeEstimate {
	n := uint64(shell.MaxInput)
	if len(args) > 0 && args[0].Elem != nil && args[0].Elem.Max < n {
		n = args[0].Elem.Max
	}
	return cost.RangedSizeEstimate(0, n)
}

// shellDirsSize bounds shell.dirs: at most one directory per word.
func shellDirsSize(args []cost.SizeEstimate) cost.SizeEstimate {
	n := uint64(shell.MaxInput)
	if len(args) > 0 && args[0].Elem != nil && args[0].Elem.Max < n {
		n = args[0].Elem.Max
	}
	return cost.ListSizeEstimate(cost.RangedSizeEstimate(0, n+1), cost.RangedSizeEstimate(0, n))
}
