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
	// Set here, not in the commands, so that tests running the commands
	// in process keep their collector.
	switch collectorFor(os.Args[1:]) {
	case daemonCollector:
		daemonGC()
	case hookCollector:
		shortLivedGC()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// The collectors of collectorFor.
const (
	defaultCollector = iota
	hookCollector    // a process per event: shortLivedGC
	daemonCollector  // the decision daemon, long-lived: daemonGC
)

// collectorFor is the collector of the command args (os.Args[1:]).
func collectorFor(args []string) int {
	switch {
	case len(args) > 1 && args[0] == "hook" && args[1] == "daemon":
		return daemonCollector
	case len(args) > 0 && args[0] == "hook":
		return hookCollector
	}
	return defaultCollector
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

// daemonGCPercent is the decision daemon's GOGC.
const daemonGCPercent = 400

// daemonGC sets the collector of the decision daemon (celguard hook
// daemon), unless GOGC or GOMEMLIMIT say otherwise. It lives for many
// events, so shortLivedGC's collector off up to hookGCLimit would keep
// about that much memory (271 MB resident after 1,800 warm PreToolUse
// calls, BENCHMARKS.md). Its live heap is about 12 MB and a call allocates
// about 200 KB: GOGC=400 collects every ~270 calls, for the same CPU per call
// as the collector off, at 108 MB resident.
func daemonGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(daemonGCPercent)
}
