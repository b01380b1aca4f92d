package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcAgent: a process whose program (first or second argument, as
// node runs gemini) is an agent host's is one; others are not.
func TestProcAgent(t *testing.T) {
	// tail -f waits on a file called gemini, whatever its argv[0] says.
	tail, err := exec.LookPath("tail")
	require.NoError(t, err)
	gemini := filepath.Join(t.TempDir(), "gemini")
	require.NoError(t, os.WriteFile(gemini, nil, 0o600))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"/opt/claude", "-f", gemini}, "claude"},
		{[]string{"node", gemini, "-f"}, "gemini"},
		{[]string{"tail", "-f", gemini}, ""},
		{[]string{"tail", "-f", gemini, "codex"}, ""},
	} {
		cmd := &exec.Cmd{Path: tail, Args: tt.args}
		require.NoError(t, cmd.Start())
		waitExec(t, cmd.Process.Pid, tt.args[0])
		got, ok := procAgent(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		assert.Equal(t, tt.want, got, tt.args)
		assert.Equal(t, tt.want != "", ok, tt.args)
	}
	_, ok := procAgent(os.Getpid())
	assert.False(t, ok, "the test binary is no agent host")
}

// waitExec waits until process pid runs its own program (its command line
// starts with arg0): between fork and exec, /proc shows the parent's.
func waitExec(t *testing.T, pid int, arg0 string) {
	t.Helper()
	file := filepath.Join("/proc", strconv.Itoa(pid), "cmdline")
	for range 1000 {
		if b, err := os.ReadFile(file); err == nil && strings.HasPrefix(string(b), arg0+"\x00") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not exec %s", pid, arg0)
}
