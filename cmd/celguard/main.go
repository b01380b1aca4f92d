// Command celguard decides AI-agent tool calls against celguard policies and
// checks policy files.
//
// The commands live in this package as cobra commands built by newRootCmd;
// run is the entry point tests call with their own stdin, stdout and
// stderr. Only main exits.
package main

import "os"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		// A process per event: set here, not in the command, so that tests
		// running the command in process keep their collector.
		shortLivedGC()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
