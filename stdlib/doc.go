// Package stdlib holds celguard's CEL function libraries for tool calls: shell
// parsing, paths, globs, canonical hashing, secrets and URLs.
//
// Each library is a cel.Lib with a namespaced name (celguard.lib.<name>) and
// documented functions; celenv adds them all to the one policy environment.
package stdlib
