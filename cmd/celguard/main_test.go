package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite the golden files that testdata/script/*.txtar compare with cmp")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"celguard": func() {
			zeroDurations = true // stable reports for golden files
			// Decisions without their audit record (a fresh id and time
			// per decision) unless CELGUARD_TEST_AUDIT=1: stable goldens.
			noDecisionAudit = os.Getenv("CELGUARD_TEST_AUDIT") != "1"
			// Scripts cannot give celguard a terminal; CELGUARD_TEST_TERMINAL=1
			// says stdin is one. Only this test binary reads it.
			stdinIsTerminal = func(io.Reader) bool { return os.Getenv("CELGUARD_TEST_TERMINAL") == "1" }
			// CELGUARD_TEST_STDERR_TERMINAL=1 says stderr is one (replay's progress).
			stderrIsTerminal = func(io.Writer) bool { return os.Getenv("CELGUARD_TEST_STDERR_TERMINAL") == "1" }
			// The process tree of a test run is not the user's terminal;
			// CELGUARD_TEST_AGENT_PARENT=NAME plays an agent host above it.
			agentAncestor = func() (string, int, bool) {
				name := os.Getenv("CELGUARD_TEST_AGENT_PARENT")
				return name, 1, name != ""
			}
			os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScript runs the command-line scripts in testdata/script, with celguard
// run in-process. `go test ./cmd/celguard -update` rewrites the golden
// files the scripts compare with cmp.
//
// Besides testscript's commands, scripts have `exits CODE program [args...]`:
// it runs the program like exec and fails unless it exits with CODE.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": cmdExits, "reqid": cmdReqID},
	})
}

// cmdReqID is `reqid VAR`: it sets VAR to the approval request id named
// in the last command's stdout ("approval request ID"), and fails when
// there is none.
func cmdReqID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: reqid VAR")
	}
	m := regexp.MustCompile(`approval request ([0-9a-f]{8})`).FindStringSubmatch(ts.ReadFile("stdout"))
	if m == nil {
		ts.Fatalf("reqid: no approval request id in stdout")
	}
	ts.Setenv(args[0], m[1])
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: CODE must be a number, not %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// TestEveryCommandHasExamples walks the command tree: every command's help
// shows an Examples section.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		if c.Example == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(stdio{}))
}
