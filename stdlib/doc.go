// Package stdlib holds celguard's CEL function libraries for tool calls: shell
// parsing, paths, globs, canonical hashing, secrets and URLs.
//
// Each library is a cel.Lib with a namespaced name (celguard.lib.<name>) and
// documented functions; celenv adds them all to the one policy environment.
//
// A Lib (from New) is immutable and safe for concurrent use. Per-call state
// lives in a CallScope: the late-bound functions (shell.parse,
// shell.commands, shell.programs and secrets.*) are implemented by the scope,
// which memoises them by argument so that all the rules evaluated for one
// tool call parse a command once. Use one scope per call, from one goroutine
// at a time.
//
// Literal glob and domain-pattern arguments are validated when a policy
// compiles; runtime problems are CEL error values, never panics. A shell
// command that does not parse is not an error: its parse says so (ok is
// false), so rules can fail closed.
//
// The shell analysis itself (parsing a command line into the commands it
// would run) is package stdlib/shell, which does not depend on CEL; this
// package holds its CEL bindings, memoisation and cost estimates.
//
// Versioning: every function records the stdlib version it arrived in, and
// WithVersion pins the set a Lib declares. The function names and signatures
// are pinned by a test. docs/stdlib.md lists every function.
package stdlib
