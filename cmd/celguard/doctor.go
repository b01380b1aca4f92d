package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/setup"
)

func newDoctorCmd(sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor [HOST...]",
		Short: "Check that celguard's hooks guard each host as installed",
		Long: `Doctor checks celguard's hooks in the project's settings (under the current
directory), the user's (under the home directory) and the managed
(administrator) settings of each HOST (claude-code, codex, gemini, cursor, copilot, opencode;
all of them when none is named), and prints each file with its scope:

  - a celguard hook is registered for every event celguard needs;
  - the installed command, run as the host runs it (sh -c, the event on
    stdin, in the current directory), answers one real decision: an
    ordinary call (the shell tool running ls) in a session of its own.
    Doctor prints what it answered; a hook that fails on it (a policy that
    does not compile, a --server that is down) refuses every call and
    fails the check, and so does one that fails open. The decision is a
    real one: a decision log records it;
  - the hook is installed in one scope only: installed in two (the user's
    and the project's), the host runs both and every call is decided, and
    counted, twice;
  - Codex installed in projects only: which projects it leaves unguarded
    (those without the hook or that Codex does not trust);
  - the binary the hook runs exists at an absolute path, and neither it nor
    a directory above it can be written or re-permissioned by you, and so by
    the agent, whose commands run as you (a missing binary lets every call
    through on Claude Code and Codex);
  - the host's version (its command on PATH) is not older than the one
    celguard's hooks were tested with;
  - Codex trusts the hooks as installed (it skips an untrusted or changed
    hook without a word), and a project's hooks are in a project it trusts;
    Gemini CLI and Claude Code have not switched hooks off.

Each finding is printed with what to fix. The exit code is 0 when nothing
failed (warnings pass), 1 when a check failed or a named HOST has no
celguard hook, 2 on a usage error.`,
		Example: `  # Every host, this project and the user
  celguard doctor

  # Codex alone: fails unless its hooks are installed and trusted
  celguard doctor codex`,
		ValidArgs: hooks.Hosts(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(runDoctor(args, sio))
		},
	}
}

func runDoctor(hostArgs []string, sio stdio) int {
	for _, h := range hostArgs {
		if _, err := hooks.New(h, hooks.Options{}); err != nil {
			fmt.Fprintf(sio.stderr, "celguard doctor: %v\n", err)
			return exitUsage
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(sio.stderr, "celguard doctor: %v\n", err)
		return exitUsage
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(sio.stderr, "celguard doctor: no home directory: %v\n", err)
		return exitUsage
	}
	hostList := hostArgs
	if len(hostList) == 0 {
		hostList = hooks.Hosts()
	}
	checks := setup.Doctor(hostList, len(hostArgs) > 0, setup.DoctorEnv{ProjectDir: cwd, HomeDir: home, CodexHome: os.Getenv("CODEX_HOME")})
	code, installed := printChecks(sio.stdout, cwd, checks)
	if doctorBundles(sio) == exitFindings {
		code = exitFindings
	}
	if !installed && len(hostArgs) == 0 {
		fmt.Fprintln(sio.stdout, "no celguard hook is installed for any host: nothing is guarded")
		code = exitFindings
	}
	return code
}

// printChecks prints the checks, grouped by host and settings file (shown
// relative to cwd when under it), each with its fix. code is exitFindings
// when one failed; installed says whether any settings file was found.
func printChecks(w io.Writer, cwd string, checks []setup.Check) (code int, installed bool) {
	last := ""
	for _, c := range checks {
		head := c.Host
		if c.Settings != "" {
			shown := c.Settings
			if rel, err := filepath.Rel(cwd, c.Settings); err == nil && !strings.HasPrefix(rel, "..") {
				shown = rel
			}
			head += "  " + shown + " (" + c.Scope.String() + " scope)"
		}
		if head != last {
			fmt.Fprintln(w, head)
			last = head
		}
		fmt.Fprintf(w, "  %-4s  %s\n", c.Level, c.Message)
		if c.Fix != "" {
			fix := strings.TrimRight(c.Fix, "\n")
			fmt.Fprintf(w, "        fix: %s\n", strings.ReplaceAll(fix, "\n", "\n             "))
		}
		if c.Level == setup.LevelFail {
			code = exitFindings
		}
		if c.Settings != "" {
			installed = true
		}
	}
	return code, installed
}
