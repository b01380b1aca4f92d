package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks/daemonwire"
)

// capPolicy lets through at most three Bash calls a session, counted
// before the call, and blocks rm -rf.
const capPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: cap
counters:
  - name: calls
    phase: before
    scope: session
    increment_when: 'true'
rules:
  - id: no-rm
    match: {tools: [Bash]}
    condition: 'command.contains("rm -rf")'
    verdict: block
    code: no_rm
  - id: cap-calls
    match: {tools: [Bash]}
    condition: 'counters.calls >= %d'
    verdict: block
    code: capped
`

// daemonFixture is a user with a repository, a policy, a state directory
// and the real celguard binary as the daemon the hook starts.
type daemonFixture struct {
	t        *testing.T
	repo     string
	policy   string
	state    string
	inProc   atomic.Int64 // events this test process decided itself
	mu       sync.Mutex
	daemons  []*exec.Cmd
	refusals []string // why the daemon's answers were not used
	spawned  atomic.Int64
	noSpawn  atomic.Bool
	// lastSocket is the socket the hook asked the last daemon it started
	// to answer on.
	lastSocket atomic.Value
	hostArgs   []string
}

// newDaemonFixture makes the fixture. The daemons the hook starts run in
// this process (the daemon command, on a context the test ends), or, with
// binary, as the real celguard binary (a process the test can kill).
func newDaemonFixture(t *testing.T, limit int, binary bool) *daemonFixture {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	t.Setenv("CELGUARD_DAEMON", "")
	f := &daemonFixture{t: t, repo: t.TempDir(), state: t.TempDir()}
	require.NoError(t, os.Mkdir(filepath.Join(f.repo, ".git"), 0o755))
	f.policy = filepath.Join(f.repo, "cap.yaml")
	f.setLimit(limit)
	bin := ""
	if binary {
		bin = celguardBinary(t) // built from this directory
	}
	t.Chdir(f.repo)
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	old := spawnDaemon
	spawnDaemon = func(_ string, args []string) error {
		for i, a := range args {
			if a == "--socket" && i+1 < len(args) {
				f.lastSocket.Store(args[i+1])
			}
		}
		if f.noSpawn.Load() {
			return nil
		}
		f.spawned.Add(1)
		if bin == "" {
			cmd := newHookDaemonCmd(stdio{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
			cmd.SetArgs(args[2:]) // after "hook daemon"
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			running.Go(func() { _ = cmd.ExecuteContext(ctx) })
			return nil
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/"
		if err := cmd.Start(); err != nil {
			return err
		}
		f.mu.Lock()
		f.daemons = append(f.daemons, cmd)
		f.mu.Unlock()
		return nil
	}
	onInProcess = func() { f.inProc.Add(1) }
	onRefused = func(why string) {
		f.mu.Lock()
		f.refusals = append(f.refusals, why)
		f.mu.Unlock()
	}
	t.Cleanup(func() {
		cancel()
		running.Wait()
		spawnDaemon, onInProcess, onRefused = old, nil, nil
		f.killDaemons()
	})
	f.hostArgs = []string{"--state-dir", f.state, "--policy", f.policy}
	return f
}

func (f *daemonFixture) setLimit(n int) {
	require.NoError(f.t, os.WriteFile(f.policy, fmt.Appendf(nil, capPolicy, n), 0o644))
}

// event is a PreToolUse of host running command in session.
func (f *daemonFixture) event(host, session, command string) []byte {
	ev := map[string]any{"session_id": session, "cwd": f.repo, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": command}, "tool_use_id": "toolu_" + command}
	b, _ := json.Marshal(ev)
	return b
}

// hook runs celguard hook host on ev in this process and says whether the
// call was let through.
func (f *daemonFixture) hook(host string, ev []byte) (allowed bool, out string) {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"hook", host}, f.hostArgs...), bytes.NewReader(ev), &stdout, &stderr)
	require.Contains(f.t, []int{0, 2}, code, stderr.String())
	out = stdout.String()
	return code == 0 && !strings.Contains(out, `"deny"`), out + stderr.String()
}

// socket is the daemon's socket, found in the state directory.
func (f *daemonFixture) socket() string {
	socks, _ := filepath.Glob(filepath.Join(f.state, daemonwire.DirName, "*.sock"))
	if len(socks) != 1 {
		return ""
	}
	return socks[0]
}

// waitDaemon waits until a daemon answers on the socket.
func (f *daemonFixture) waitDaemon() {
	f.t.Helper()
	for range 600 {
		if s := f.socket(); s != "" {
			if c, err := net.Dial("unix", s); err == nil {
				c.Close()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatal("no daemon answered on its socket")
}

// killDaemons kills every daemon started so far, as a crash would.
func (f *daemonFixture) killDaemons() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.daemons {
		_ = c.Process.Signal(syscall.SIGKILL)
		_ = c.Wait()
	}
	f.daemons = nil
}

// TestDaemonDecidesAsTheHookAndLosesNoCountWhenKilled: the first call is
// decided in process and starts the daemon; the next ones are decided by
// the daemon, with the same state; killed mid-session, the daemon loses no
// count (the next call is decided in process on the same state files),
// and the cap holds exactly.
func TestDaemonDecidesAsTheHookAndLosesNoCountWhenKilled(t *testing.T) {
	f := newDaemonFixture(t, 3, true)
	ok, out := f.hook("claude-code", f.event("claude-code", "s1", "ls"))
	assert.True(t, ok, out)
	assert.EqualValues(t, 1, f.inProc.Load(), "no daemon yet: decided in process")
	assert.EqualValues(t, 1, f.spawned.Load(), "and the daemon started for the next call")
	f.waitDaemon()

	ok, out = f.hook("claude-code", f.event("claude-code", "s1", "pwd"))
	assert.True(t, ok, out)
	assert.EqualValues(t, 1, f.inProc.Load(), "the daemon decided the second call")
	ok, out = f.hook("claude-code", f.event("claude-code", "s1", "rm -rf /"))
	assert.False(t, ok, "the daemon blocks what the hook blocks: %s", out)
	assert.Contains(t, out, "no_rm")
	st, err := daemonStatus(f.socket())
	require.NoError(t, err)
	assert.EqualValues(t, 2, st.DaemonAnswers, "the daemon's status counts the two events it answered")

	f.killDaemons()
	f.noSpawn.Store(true)
	ok, out = f.hook("claude-code", f.event("claude-code", "s1", "whoami"))
	assert.True(t, ok, "the third call: the daemon's count is in the state files: %s", out)
	assert.EqualValues(t, 2, f.inProc.Load(), "the daemon is gone: decided in process")
	ok, out = f.hook("claude-code", f.event("claude-code", "s1", "date"))
	assert.False(t, ok, "the fourth call is over the cap: %s", out)
	assert.Contains(t, out, "capped")
}

// TestDaemonFollowsAPolicyEdit: a policy edited while the daemon runs
// decides the next call, in the daemon, with the new digest.
func TestDaemonFollowsAPolicyEdit(t *testing.T) {
	f := newDaemonFixture(t, 100, false)
	ok, _ := f.hook("claude-code", f.event("claude-code", "s2", "ls"))
	require.True(t, ok)
	f.waitDaemon()
	ok, _ = f.hook("claude-code", f.event("claude-code", "s2", "pwd"))
	require.True(t, ok)
	require.EqualValues(t, 1, f.inProc.Load())

	f.setLimit(2) // two calls made: the next is over the new cap
	ok, out := f.hook("claude-code", f.event("claude-code", "s2", "whoami"))
	assert.False(t, ok, "the edited policy decides the next call: %s", out)
	assert.Contains(t, out, "capped")
	assert.EqualValues(t, 1, f.inProc.Load(), "decided by the daemon, with the new digest: %q", f.refusals)
}

// TestDaemonKeepsExactCapsForTwoHostsAtOnce: two hosts calling the same
// daemon concurrently in one session keep the cap exactly.
func TestDaemonKeepsExactCapsForTwoHostsAtOnce(t *testing.T) {
	f := newDaemonFixture(t, 5, false)
	ok, _ := f.hook("claude-code", f.event("claude-code", "warm", "ls"))
	require.True(t, ok)
	f.waitDaemon()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		host := []string{"claude-code", "codex"}[i%2]
		wg.Go(func() {
			if ok, _ := f.hook(host, f.event(host, "shared", fmt.Sprintf("echo %d", i))); ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 5, allowed.Load(), "exactly the cap let through")
	assert.EqualValues(t, 1, f.inProc.Load(), "the daemon decided every concurrent call: %q", f.refusals)
}

// TestFakeDaemonNeverDecides: a process that binds the daemon's socket
// before the hook runs and allows everything is asked, cannot sign its
// answer, and decides nothing: the hook decides in process.
func TestFakeDaemonNeverDecides(t *testing.T) {
	f := newDaemonFixture(t, 100, false)
	f.noSpawn.Store(true)
	// Find the socket the hook uses: one call starts (here: would start)
	// the daemon and makes its directory.
	ok, _ := f.hook("claude-code", f.event("claude-code", "s3", "ls"))
	require.True(t, ok)
	sock := f.lastSocket.Load().(string)
	var asked atomic.Int64
	fakeDaemon(t, sock, func(p daemonwire.HookParams) (daemonwire.HookResult, error) {
		asked.Add(1)
		return daemonwire.HookResult{Digest: p.Digest, Version: "v9", MAC: strings.Repeat("00", 32),
			Body: []byte(`{"stdout":"","stderr":"","exit":0}`)}, nil
	})

	before := f.inProc.Load()
	ok, out := f.hook("claude-code", f.event("claude-code", "s3", "rm -rf /"))
	assert.False(t, ok, "the fake's allow is not the answer: %s", out)
	assert.Contains(t, out, "no_rm")
	assert.EqualValues(t, 1, asked.Load(), "the fake was asked")
	assert.EqualValues(t, before+1, f.inProc.Load(), "and the hook decided in process")
	assert.Contains(t, f.refusals, "the answer's MAC does not check")
}

// fakeDaemon listens on sock until the test ends and answers every hook
// request on the daemon's wire with answer (daemonwire.ServeConn).
func fakeDaemon(t *testing.T, sock string, answer func(daemonwire.HookParams) (daemonwire.HookResult, error)) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	conns.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = daemonwire.ServeConn(c, daemonwire.MaxAnswerLine, answer)
			})
		}
	})
}
