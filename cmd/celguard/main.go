// Command celguard decides AI-agent tool calls against celguard policies and
// checks policy files.
//
// The commands live in this package as cobra commands built by newRootCmd;
// run is the entry point tests call with their own stdin, stdout and
// stderr. Only main exits.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		// A process per event: set here, not in the command, so that tests
		// running the command in process keep their collector.
		shortLivedGC()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// hookGCLimit is the heap size at which a hook process collects garbage.
const hookGCLimit = 256 << 20

// shortLivedGC turns the collector off below hookGCLimit, unless GOGC or
// GOMEMLIMIT say otherwise: a hook process lives for one event and
// allocates tens of megabytes compiling the policies, which the collector
// scanned for about a third of the process's instructions. Past the limit
// (a huge event) it collects as usual.
func shortLivedGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(hookGCLimit)
	debug.SetGCPercent(-1)
}
