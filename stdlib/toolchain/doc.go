// Package toolchain knows the workspace files that a toolchain runs or loads
// later (a Makefile's recipes, package.json's lifecycle scripts, build.rs, a
// CI workflow's run: steps, a git hook, an agent's instruction file, ...)
// and reads such a file's content into the commands it would run.
//
// A write to one of these files is not "just a write inside the workspace":
// the next make, npm install, cargo test, pytest or git commit runs what it
// says. The Table lists the files per ecosystem (docs/policies.md prints
// it); Analyze reads a content in the file's own format (make recipes, JSON
// and TOML script tables, YAML workflow steps, go:generate lines, shell
// scripts, fenced shell blocks of Markdown) and returns the shell commands
// it holds, which a policy judges with the shell analyser as it judges a
// direct command. Files that hold program code (build.rs, conftest.py,
// setup.py, a Gemfile, a Gradle script, ...) cannot be proven safe by shell
// analysis: Analyze passes them only through a conservative check of the
// capabilities the code names (documented per language in codeRules) and
// otherwise reports them unproven.
//
// The package is pure: it never reads the file system, and a content that
// does not parse is reported unproven, never an error and never a panic.
package toolchain
