// Package shell analyses a bash command line statically: it says which
// programs the line would run and with which words, without running
// anything. It is the analyser behind celguard's shell.* CEL functions, and
// has no dependency on CEL.
//
// Parse turns a command string into a Line: the flat list of every simple
// Command the string would run, in source order. The walk reaches into
// lists (a && b; c), pipelines, compound commands (if, while, for, case,
// { }, ( )), function bodies, command and process substitutions ($( ),
// ` `, <( ), >( )), the scripts of sh/bash/zsh... -c, eval and here-documents
// fed to a shell, and the commands of find -exec. For each command it
// reports:
//
//   - the program (the basename of argv[0]) and the words, quotes removed
//     and escapes decoded ($'\x72m' is rm);
//   - the wrappers stripped to reach the program: sudo, env, timeout, nice,
//     nohup, time, command, xargs, exec, ... with their own options, so
//     sudo -u root env A=1 rm -rf / has program rm;
//   - NAME=value assignments, redirections (with here-document bodies),
//     the earlier stages of its pipeline, whether it runs in the
//     background, its nesting depth and how it is reached.
//
// Expansions are modelled as far as they can be known from the string
// alone: brace expansion is done ({rm,-rf,/} runs rm -rf /), and a variable
// assigned a literal value earlier in the same string is substituted
// (x=rm; $x -rf / runs rm), its unquoted value split into fields on
// blanks. Every other expansion ($HOME, $(cmd), $((1+1)), ${x:-y}) is kept
// in source form and its word marked dynamic.
//
// The analysis fails closed rather than guessing:
//
//   - a string that is not valid bash has OK == false and a best-effort,
//     quote-aware split into commands (Via "fallback"), so rules that deny
//     still see the words and the redirections (> f, 2>>log, &> f keep
//     their operator and target; a target that never comes is dynamic);
//   - when some code would run that the analysis cannot see (a program name
//     that is not a literal, bash -c "$X", eval "$X", nesting deeper than
//     MaxDepth, more than MaxCommands commands, an oversized brace or
//     variable expansion) the Line is Opaque and OpaqueReasons says why;
//   - when expansions would make the Line larger than its Bounds (more
//     commands or words than the string has room for, or a word longer
//     than the string), the rest is cut off and the Line is Opaque with
//     ReasonOverBounds.
//
// What it deliberately does not model: the environment the command would
// run in (variables not assigned in the string, such as $HOME, stay
// unexpanded), a non-default IFS (values are split on space, tab and
// newline), aliases and shell functions invoked by name (an alias or a
// function call is a command with that name; a function's body is listed
// where it is defined), files read by source or ., pathname expansion
// (globs) and tilde expansion (*.go and ~ stay as written), shell options
// (set -f, shopt) and history expansion. It cannot know which options of an
// arbitrary program take a value (see Command.Operands).
//
// The work one string can cause is bounded (MaxInput, MaxDepth,
// MaxCommands, MaxNesting, MaxInheritedRedirects), so a hostile command
// cannot make the analysis hang. The size of the Line is bounded too, in
// terms of the length of the string (see Bounds and SizeBounds): celguard's
// static cost model of the shell.* CEL functions (stdlib/shell_cost.go)
// relies on those bounds to run proven expressions without cost
// accounting, so Parse guarantees them for every string. Parse is safe for concurrent use. Most
// command lines are a few plain words joined by &&, ||, | or ;; those take
// a fast path that builds the same result without the bash parser.
//
// Quote goes the other way: it writes a word so that the shell, and Parse,
// read it back as that literal word. Every command line celguard writes or
// builds from an argv array is quoted with it.
package shell
