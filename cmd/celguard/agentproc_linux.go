package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/celguard/celguard/hooks"
)

// agentHosts are the program names of agent hosts (hooks.HostInfo.Command),
// as their processes' first or second argument shows them (Gemini CLI runs
// as node .../gemini).
var agentHosts = func() map[string]bool {
	m := map[string]bool{}
	for _, h := range hooks.HostTable() {
		m[h.Command] = true
	}
	return m
}()

// agentAncestor walks this process's ancestors in /proc and returns the
// first that is an agent host. An agent that detaches its command from
// its own process tree (a double fork) escapes it: defense in depth.
var agentAncestor = func() (prog string, pid int, ok bool) {
	pid = os.Getppid()
	for range 64 {
		if pid <= 1 {
			return "", 0, false
		}
		if prog, ok := procAgent(pid); ok {
			return prog, pid, true
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return "", 0, false
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			return "", 0, false
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			return "", 0, false
		}
	}
	return "", 0, false
}

// procAgent reports whether process pid runs an agent host.
func procAgent(pid int) (string, bool) {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i, a := range args {
		if i > 1 {
			break
		}
		if b := filepath.Base(a); agentHosts[b] {
			return b, true
		}
	}
	return "", false
}
