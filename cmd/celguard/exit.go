package main

import "fmt"

// Exit codes: the same contract for every subcommand.
const (
	// exitOK: success. Lint found no error-severity diagnostic; eval printed
	// a decision for every call, whatever its verdict.
	exitOK = 0
	// exitFindings: lint found diagnostics at or above --fail-on (error
	// by default).
	exitFindings = 1
	// exitUsage: bad flags or arguments, unreadable files, invalid input,
	// policies that do not compile (eval), or a call the engine could not
	// finish deciding.
	exitUsage = 2
)

// exitCodesHelp documents the contract in the root command's help.
const exitCodesHelp = `Exit codes (the same for every command):
  0  success: lint found no errors (warnings are printed but pass), or eval
     printed a decision for every call, whatever the verdict
  1  findings: lint found diagnostics at or above --fail-on (errors by
     default)
  2  usage or I/O error: bad flags or arguments, a missing or unreadable
     file, input that is not valid JSON or not a valid call or event
     (a stream is read to its end first, each bad value reported),
     policies that do not compile (eval), a call the engine could not
     finish deciding (eval prints its fail-closed block decision first)`

// exitStatus is what a command's RunE returns when the command has already
// reported its outcome and only the exit code remains to be set.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// status turns a run function's exit code into RunE's error.
func status(code int) error {
	if code == exitOK {
		return nil
	}
	return exitStatus(code)
}
