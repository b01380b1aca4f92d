// Command celguard-hook is celguard's lean hook client: the command
// `celguard hook install` writes when it sits beside the celguard binary.
// Run as `celguard-hook HOST [FLAGS] < EVENT`, it answers exactly as
// `celguard hook HOST [FLAGS]` does, in a fraction of its start-up: it
// links no policy engine (no cel-go, protobuf, SQL parser or YAML), only
// the daemon's wire protocol (hooks/daemonwire), and asks the user's
// decision daemon, which `celguard hook` starts (docs/hooks.md, "The
// decision daemon").
//
// An event celguard ignores (Claude Code's Notification, say) it answers
// itself, without the daemon or celguard beside it, when it can prove
// that answer is the full hook's (daemonwire.IgnoredAnswer, a table
// generated from the host table).
//
// It uses the daemon's answer only when the daemon proves itself: the
// answer carries an HMAC under the state directory's key over this call's
// fresh nonce, and the manifest of the policy files it decided with is
// what is on disk now (daemonwire.Ask). On any doubt (no daemon, a bad
// MAC, a stale manifest, flags it does not know, an event it cannot
// send) it runs `celguard hook HOST [FLAGS]` beside it with the event on
// stdin, and relays its stdout, stderr and exit status exactly; that
// process decides in process and starts the daemon, as it always does.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/celguard/celguard/hooks/daemonwire"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// onFallback, when set, is told why an event went to the full hook
// (tests).
var onFallback func(why string)

// run answers one event; its result is the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	input, rerr := io.ReadAll(io.LimitReader(stdin, daemonwire.MaxEvent+1))
	if rerr == nil && len(input) <= daemonwire.MaxEvent {
		if a, ok := ignored(args, input); ok {
			trace(stderr, "answered here: an event celguard ignores")
			_, _ = io.WriteString(stdout, a.Stdout)
			_, _ = io.WriteString(stderr, a.Stderr)
			return a.Exit
		}
	}
	full, err := fullBinary()
	if err != nil {
		// No celguard to decide with: a broken installation, which
		// `celguard doctor` reports. Exit 2 is a block on the hosts that
		// read exit codes; the message says why.
		fmt.Fprintf(stderr, "celguard-hook: %v; install celguard beside celguard-hook, or install the hooks again with 'celguard hook install'\n", err)
		return 2
	}
	why := "the event could not be read"
	if rerr == nil {
		a, err := ask(full, args, input)
		if err == nil {
			trace(stderr, "the daemon's answer")
			_, _ = io.WriteString(stdout, a.Stdout)
			_, _ = io.WriteString(stderr, a.Stderr)
			return a.Exit
		}
		why = err.Error()
	}
	if onFallback != nil {
		onFallback(why)
	}
	trace(stderr, "celguard hook decides: "+why)
	// What was read, then whatever is left: the full hook reads the event
	// as if this process had not.
	return runFull(full, args, io.MultiReader(bytes.NewReader(input), stdin), stdout, stderr)
}

// trace says, with CELGUARD_HOOK_TRACE=1 (celguard doctor sets it),
// who answered and why, on stderr before the answer's own.
func trace(stderr io.Writer, what string) {
	if os.Getenv("CELGUARD_HOOK_TRACE") == "1" {
		fmt.Fprintf(stderr, "celguard-hook: %s\n", what)
	}
}

// ignored is the answer to an event celguard ignores, given here: the
// whole of what `celguard hook ARGS` does for it is to answer
// (daemonwire.IgnoredAnswer) and to run the state directory's periodic
// cleanup, which this process runs too. ok is false for anything it
// cannot prove: a command line the lean client leaves to the full hook,
// an event the generated table does not list, no state directory (on
// which the full hook fails).
func ignored(args []string, input []byte) (daemonwire.CommandAnswer, bool) {
	ha, err := daemonwire.ParseHookArgs(args)
	if err != nil {
		return daemonwire.CommandAnswer{}, false
	}
	a, ok := daemonwire.IgnoredAnswer(ha.Host, input)
	if !ok {
		return daemonwire.CommandAnswer{}, false
	}
	sd, err := ha.StateStore()
	if err != nil {
		return daemonwire.CommandAnswer{}, false
	}
	// Its errors do not change the answer, in the full hook either.
	_, _ = sd.MaybeCleanup()
	return a, true
}

// ask asks the daemon of full for the answer.
func ask(full string, args []string, input []byte) (daemonwire.CommandAnswer, error) {
	ha, err := daemonwire.ParseHookArgs(args)
	if err != nil {
		return daemonwire.CommandAnswer{}, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return daemonwire.CommandAnswer{}, err
	}
	return daemonwire.Ask(context.Background(), daemonwire.Request{Exe: full, Args: ha, Event: input, WorkDir: wd})
}

// fullBinary is the celguard binary beside this one, symbolic links
// resolved (both this binary's and its own): the binary `celguard hook`
// names its daemon by.
func fullBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", err
	}
	name := "celguard"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	full, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(exe), name))
	if err != nil {
		return "", fmt.Errorf("no celguard beside %s: %w", exe, err)
	}
	return full, nil
}

// runFull runs `full hook ARGS...` with stdin, relaying its stdout,
// stderr and exit status.
func runFull(full string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.Command(full, append([]string{"hook"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		relaySignal(ee.ProcessState) // killed by a signal: die by it too
		return 2
	}
	fmt.Fprintf(stderr, "celguard-hook: %v\n", err)
	return 2
}
