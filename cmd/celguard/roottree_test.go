package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHookTreeAnswersAsTheWholeTree runs hook command lines in the tree a
// hook process builds (the hook command alone) and in the whole tree, and
// requires the same exit code, output and errors: help, usage errors,
// subcommands and decisions, denied and allowed.
func TestHookTreeAnswersAsTheWholeTree(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("CELGUARD_DAEMON", "off")
	t.Chdir(t.TempDir())
	deny := `{"session_id":"s","cwd":"/home/user/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`
	allow := `{"session_id":"s","cwd":"/home/user/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`
	notification := `{"session_id":"s","cwd":"/home/user/p","hook_event_name":"Notification","message":"m"}`
	cases := []struct {
		args  []string
		stdin string
	}{
		{args: []string{"hook"}},
		{args: []string{"hook", "--help"}},
		{args: []string{"hook", "-h"}},
		{args: []string{"hook", "install", "--help"}},
		{args: []string{"hook", "daemon", "--help"}},
		{args: []string{"hook", "no-such-host"}, stdin: allow},
		{args: []string{"hook", "claude-code", "--no-such-flag"}, stdin: allow},
		{args: []string{"hook", "claude-code", "extra"}, stdin: allow},
		{args: []string{"hook", "claude-code", "--version"}, stdin: allow},
		{args: []string{"hook", "claude-code", "--state-dir", t.TempDir()}, stdin: deny},
		{args: []string{"hook", "claude-code", "--state-dir", t.TempDir()}, stdin: allow},
		{args: []string{"hook", "claude-code", "--state-dir", t.TempDir()}, stdin: notification},
		{args: []string{"hook", "claude-code", "--state-dir", t.TempDir()}, stdin: "{not json"},
		{args: []string{"hook", "install", "no-such-host", "--dry-run"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			runIn := func(whole bool) (int, string, string) {
				var out, errb bytes.Buffer
				sio := stdio{stdin: strings.NewReader(c.stdin), stdout: &out, stderr: &errb}
				root := newRootCmdFor(sio, c.args)
				if whole {
					root = newRootCmd(sio)
				}
				code := runRoot(context.Background(), root, c.args, &errb)
				return code, out.String(), errb.String()
			}
			if n := len(newRootCmdFor(stdio{}, c.args).Commands()); n > 3 {
				t.Fatalf("the hook process's tree has %d commands: the hook's alone (and help, completion) expected", n)
			}
			code, out, errs := runIn(true)
			hcode, hout, herrs := runIn(false)
			require.Equal(t, code, hcode, "exit code")
			require.Equal(t, out, hout, "stdout")
			require.Equal(t, errs, herrs, "stderr")
			if c.stdin == deny {
				require.Contains(t, hout, `"permissionDecision":"deny"`)
			}
		})
	}
}
