// Package python holds no Go code: it is the home of celguard's Python
// package (src/celguard: clients of celguard serve and adapters for
// Operator, AutoGen, Prompty and the OpenAI Agents SDK; docs/python.md).
// It is a Go package only so that its test, which provisions a virtual
// environment with the pinned hosts and runs mypy and pytest against a
// celguard serve built from this module, runs with go test ./....
package python
