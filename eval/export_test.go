package eval

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/compile"
)

// CheckFast installs f to see every evaluation that skipped the cost
// accounting (see compile.Program), with the tracked evaluation of the same
// expression; the returned function removes it. Not safe for parallel tests.
func CheckFast(f func(p *compile.Program, size uint64, tracked *cel.EvalDetails, fastOut, trackedOut ref.Val, fastErr, trackedErr error)) func() {
	checkFast = f
	return func() { checkFast = nil }
}

// Every test of the package checks the kept encodings of recent calls
// against encodings made afresh (stateenc.go).
func init() { checkRecentEncodings = true }

// PlainLinear evaluates every linear program through cel-go with a frame
// of its own, without compile.ArgString (plainLinear), until the returned
// function is called. Not safe for parallel tests.
func PlainLinear() func() {
	plainLinear = true
	return func() { plainLinear = false }
}
