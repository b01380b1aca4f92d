//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/bundle"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
)

// TestLeanClientFindsTheHooksDaemon: for every form of the hook's command
// line, the lean client (daemonwire.HookArgs.Socket) computes the socket
// `celguard hook` asks and starts its daemon on.
func TestLeanClientFindsTheHooksDaemon(t *testing.T) {
	f := newDaemonFixture(t, 100, false)
	f.noSpawn.Store(true)
	exe, err := os.Executable()
	require.NoError(t, err)
	exe, err = filepath.EvalSymlinks(exe)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"--state-dir", f.state, "--policy", f.policy},
		{"--policy", f.policy}, // the default state directory
		{"--state-dir=" + f.state, "--policy=" + f.policy, "--approve", "--fail-open", "--monitor"},
		{"--policy", "cap.yaml", "--state-dir", "."}, // relative, from the repository
		{"--policy", f.policy, "--bundle", "minimal", "--include", "rate-limit", "--exclude", "loop-detection", "--user-dir", "-", "--project-dir", "-", "--state-dir", f.state},
		{"--state-dir", f.state, "--policy", f.policy, "--timeout", "20s", "--keep-days", "3", "--max-state-bytes", "1000000"},
	} {
		f.lastSocket.Store("")
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"hook", "claude-code"}, args...), bytes.NewReader(f.event("claude-code", "s", "ls")), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		ha, err := daemonwire.ParseHookArgs(append([]string{"claude-code"}, args...))
		require.NoError(t, err, "%q", args)
		sock, _, err := ha.Socket(exe, os.Getenv)
		require.NoError(t, err)
		assert.Equal(t, f.lastSocket.Load(), sock, "%q", args)
	}
}

// leanBinary builds cmd/celguard-hook beside the celguard binary the tests
// run, as `go install ./cmd/...` installs them.
func leanBinary(t *testing.T) string {
	t.Helper()
	full := celguardBinary(t)
	leanBuilt.once.Do(func() {
		leanBuilt.path = filepath.Join(filepath.Dir(full), "celguard-hook")
		cmd := exec.Command("go", "build", "-o", leanBuilt.path, "../celguard-hook")
		cmd.Env = buildEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			leanBuilt.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if leanBuilt.err != nil {
		t.Fatal(leanBuilt.err)
	}
	return leanBuilt.path
}

var leanBuilt struct {
	once sync.Once
	path string
	err  error
}

// leanFixture is a user, a repository with a project policy, and the
// lean client with the celguard binary beside it.
type leanFixture struct {
	t                 *testing.T
	lean, full        string
	repo, state, home string
	env               []string
	args              []string // after the host
}

func newLeanFixture(t *testing.T) *leanFixture {
	f := &leanFixture{t: t, lean: leanBinary(t), full: celguardBinary(t), home: t.TempDir(), state: t.TempDir()}
	f.repo = parityRepos(t, t.TempDir())["untrusted"]
	f.env = append(os.Environ(), "HOME="+f.home, "XDG_CONFIG_HOME="+filepath.Join(f.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(f.home, ".state"), "CELGUARD_DAEMON=", "CELGUARD_HOOK_TRACE=1", "CELGUARD_TELEMETRY=")
	testdata, err := filepath.Abs(filepath.Join("..", "..", "hooks", "testdata"))
	require.NoError(t, err)
	f.args = []string{"--state-dir", f.state, "--policy", filepath.Join(testdata, "policy.yaml"), "--bundle", "recommended"}
	t.Cleanup(f.stopDaemons)
	return f
}

// answer is a hook process's output.
type answer struct {
	stdout, stderr string
	exit           int
	daemon         bool   // the lean client used the daemon's answer
	local          bool   // the lean client answered itself (an ignored event)
	why            string // why not
}

const (
	traceDaemon, traceFull = "celguard-hook: the daemon's answer\n", "celguard-hook: celguard hook decides: "
	traceLocal             = "celguard-hook: answered here: an event celguard ignores\n"
)

// hook runs the lean client for host on ev in the repository.
func (f *leanFixture) hook(host string, ev []byte) answer {
	cmd := exec.Command(f.lean, append([]string{host}, f.args...)...)
	cmd.Dir, cmd.Env, cmd.Stdin = f.repo, f.env, bytes.NewReader(ev)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// The state directory is named in an approval's command: the two
	// sides' differ.
	a := answer{stdout: strings.ReplaceAll(stdout.String(), f.state, "STATE"), stderr: strings.ReplaceAll(stderr.String(), f.state, "STATE")}
	if ee, ok := err.(*exec.ExitError); ok {
		a.exit = ee.ExitCode()
	} else {
		require.NoError(f.t, err)
	}
	if rest, ok := strings.CutPrefix(a.stderr, traceDaemon); ok {
		a.daemon, a.stderr = true, rest
	} else if rest, ok := strings.CutPrefix(a.stderr, traceLocal); ok {
		a.local, a.stderr = true, rest
	} else if rest, ok := strings.CutPrefix(a.stderr, traceFull); ok {
		a.why, a.stderr, _ = strings.Cut(rest, "\n")
	}
	return a
}

// inProcess is the answer of `celguard hook` deciding in process with
// its own state directory.
func (f *leanFixture) inProcess(host string, ev []byte, state string) answer {
	t := f.t
	t.Setenv("CELGUARD_DAEMON", "off")
	t.Setenv("HOME", f.home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(f.home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(f.home, ".state"))
	t.Chdir(f.repo)
	args := append([]string{"hook", host}, f.args...)
	args[3] = state // --state-dir's value
	var stdout, stderr bytes.Buffer
	code := run(args, bytes.NewReader(ev), &stdout, &stderr)
	return answer{stdout: strings.ReplaceAll(stdout.String(), state, "STATE"), stderr: strings.ReplaceAll(stderr.String(), state, "STATE"), exit: code}
}

// socket is the daemon's socket.
func (f *leanFixture) socket() string {
	ha, err := daemonwire.ParseHookArgs(append([]string{"claude-code"}, f.args...))
	require.NoError(f.t, err)
	sock, _, err := ha.Socket(f.full, func(k string) string {
		for i := len(f.env) - 1; i >= 0; i-- { // the last value counts, as for exec
			if v, ok := strings.CutPrefix(f.env[i], k+"="); ok {
				return v
			}
		}
		return ""
	})
	require.NoError(f.t, err)
	return sock
}

// waitDaemon waits until a daemon answers on the socket.
func (f *leanFixture) waitDaemon() {
	f.t.Helper()
	for range 600 {
		if c, err := net.Dial("unix", f.socket()); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatal("no daemon answered on its socket")
}

// stopDaemons stops the daemons the hooks started (detached, not this
// test's children): each stops once its socket is gone, and releases its
// lock when it has.
func (f *leanFixture) stopDaemons() {
	sock := f.socket()
	_ = os.Remove(sock)
	lock, err := os.OpenFile(sock+".lock", os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer lock.Close()
	for range 200 {
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Log("a daemon did not stop within 10 s of its socket's removal")
}

// TestLeanClientAnswersAsTheHook is issue 26's lean binary: every host's
// golden events, and make deploy that only the repository's policy
// blocks, answered through the lean client and its daemon give exactly
// (stdout, stderr, exit code) what `celguard hook` decides in process; a
// file added to .celguard/ while the daemon runs decides the next call; a
// fake daemon that allows everything decides nothing; with the daemon
// killed, the answers stay the same.
func TestLeanClientAnswersAsTheHook(t *testing.T) {
	f := newLeanFixture(t)
	testdata, err := filepath.Abs(filepath.Join("..", "..", "hooks", "testdata"))
	require.NoError(t, err)
	first := f.hook("claude-code", []byte(`{"session_id":"start","hook_event_name":"SessionEnd"}`))
	assert.False(t, first.daemon, "no daemon yet")
	f.waitDaemon()

	refState := t.TempDir()
	for _, host := range hooks.Hosts() {
		for _, pe := range parityEvents(t, testdata, host, f.repo, host+"-lean") {
			got, want := f.hook(host, pe.data), f.inProcess(host, pe.data, refState)
			if _, ignored := daemonwire.IgnoredAnswer(host, pe.data); ignored {
				assert.True(t, got.local, "%s/%s: an ignored event is answered by the lean client itself (not: %s)", host, pe.file, got.why)
			} else {
				assert.True(t, got.daemon, "%s/%s: decided by the daemon (not: %s)", host, pe.file, got.why)
			}
			assertSameAnswer(t, want, got, host+"/"+pe.file)
			if pe.file == "zz-make-deploy.json" {
				assert.True(t, got.exit == 2 || strings.Contains(got.stdout, "deploy_refused") || strings.Contains(got.stdout, "Deploys go through"),
					"%s: make deploy is blocked by the repository's policy: %+v", host, got)
			}
		}
	}

	t.Run("a file added to .celguard/ decides the next call", func(t *testing.T) {
		ev := []byte(`{"session_id":"added","cwd":"` + f.repo + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":"t1"}`)
		before := f.hook("claude-code", ev)
		require.True(t, before.daemon, before.why)
		require.NotContains(t, before.stdout, "deny")
		require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".celguard", "npm.yaml"), []byte(strings.NewReplacer(
			"make deploy", "npm test", "deploy", "npm").Replace(deployPolicy)), 0o644))
		after := f.hook("claude-code", ev)
		assert.False(t, after.daemon, "the daemon's manifest is stale")
		assert.Contains(t, after.why, "the policies changed")
		assert.Contains(t, after.stdout, "deny", "decided with the new file")
		again := f.hook("claude-code", ev)
		assert.True(t, again.daemon, "the daemon read the new file for the full hook: %s", again.why)
		assert.Equal(t, after.stdout, again.stdout)
	})

	t.Run("a fake daemon decides nothing", func(t *testing.T) {
		f.stopDaemons()
		fakeDaemon(t, f.socket(), func(daemonwire.HookParams) (daemonwire.HookResult, error) {
			return daemonwire.HookResult{MAC: strings.Repeat("00", 32), Body: []byte(`{"stdout":"","stderr":"","exit":0}`)}, nil
		})
		ev := []byte(`{"session_id":"fake","cwd":"` + f.repo + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make deploy"},"tool_use_id":"t2"}`)
		got := f.hook("claude-code", ev)
		assert.False(t, got.daemon)
		assert.Contains(t, got.why, "MAC does not check")
		assert.Contains(t, got.stdout, "deploy_refused", "the full hook decided in process")
		assertSameAnswer(t, f.inProcess("claude-code", ev, t.TempDir()), got, "fake")
	})

	t.Run("without a daemon the answers are the same", func(t *testing.T) {
		f.stopDaemons()
		// No daemon can start again: its directory is not the user's
		// alone, so neither client uses a socket in it.
		dir := filepath.Dir(f.socket())
		require.NoError(t, os.Chmod(dir, 0o750))
		defer os.Chmod(dir, 0o700)
		state := t.TempDir()
		for _, pe := range parityEvents(t, testdata, "claude-code", f.repo, "gone") {
			got, want := f.hook("claude-code", pe.data), f.inProcess("claude-code", pe.data, state)
			assert.False(t, got.daemon)
			if _, ignored := daemonwire.IgnoredAnswer("claude-code", pe.data); !ignored {
				assert.False(t, got.local, pe.file)
			}
			assertSameAnswer(t, want, got, pe.file)
		}
	})
}

// assertSameAnswer asserts two hook answers are the same, approval ids
// (random per request) aside.
func assertSameAnswer(t *testing.T, want, got answer, what string) {
	t.Helper()
	norm := func(s string) string { return approvalID.ReplaceAllString(s, "ID") }
	assert.Equal(t, want.exit, got.exit, "%s: exit code", what)
	assert.Equal(t, norm(want.stdout), norm(got.stdout), "%s: stdout", what)
	assert.Equal(t, norm(want.stderr), norm(got.stderr), "%s: stderr", what)
}

// TestLeanClientAnswersIgnoredEventsItself: every host's golden events
// that celguard ignores are answered by the lean client alone (no daemon,
// no celguard beside it) exactly as `celguard hook` answers them: stdout,
// stderr and exit code, and the state directory's cleanup, which is the
// full hook's only other effect. Whatever it cannot prove it leaves to
// the full hook: without one beside it, that is the broken-installation
// block.
func TestLeanClientAnswersIgnoredEventsItself(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(leanBinary(t))
	require.NoError(t, err)
	lean := filepath.Join(dir, "celguard-hook")
	require.NoError(t, os.WriteFile(lean, data, 0o755))
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "CELGUARD_DAEMON=", "CELGUARD_HOOK_TRACE=1")
	runLean := func(args []string, ev []byte) answer {
		cmd := exec.Command(lean, args...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(ev)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		a := answer{}
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "%v", err)
			a.exit = ee.ExitCode()
		}
		a.stdout, a.stderr = stdout.String(), stderr.String()
		if rest, ok := strings.CutPrefix(a.stderr, traceLocal); ok {
			a.local, a.stderr = true, rest
		}
		return a
	}
	runFull := func(args []string, ev []byte) answer {
		t.Setenv("CELGUARD_DAEMON", "off")
		t.Setenv("HOME", home)
		t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"hook"}, args...), bytes.NewReader(ev), &stdout, &stderr)
		return answer{stdout: stdout.String(), stderr: stderr.String(), exit: code}
	}
	// A state directory with a session untouched for a month: the cleanup
	// removes it.
	oldSession := func(state string) string {
		require.NoError(t, os.MkdirAll(state, 0o700))
		p := filepath.Join(state, "s-old.json")
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o600))
		old := time.Now().Add(-30 * 24 * time.Hour)
		require.NoError(t, os.Chtimes(p, old, old))
		return p
	}
	testdata, err := filepath.Abs(filepath.Join("..", "..", "hooks", "testdata"))
	require.NoError(t, err)
	answered := 0
	for _, host := range hooks.Hosts() {
		h, err := hooks.New(host, hooks.Options{})
		require.NoError(t, err)
		files, err := filepath.Glob(filepath.Join(testdata, host, "*.json"))
		require.NoError(t, err)
		for _, file := range files {
			ev, err := os.ReadFile(file)
			require.NoError(t, err)
			if dec, err := h.Decode(ev); err != nil || dec.Kind != hooks.KindIgnore {
				continue
			}
			what := host + "/" + filepath.Base(file)
			leanState, fullState := filepath.Join(t.TempDir(), "st"), filepath.Join(t.TempDir(), "st")
			leanOld, fullOld := oldSession(leanState), oldSession(fullState)
			got := runLean([]string{host, "--state-dir", leanState, "--approve"}, ev)
			want := runFull([]string{host, "--state-dir", fullState, "--approve"}, ev)
			assert.True(t, got.local, "%s: answered by the lean client alone: %+v", what, got)
			assertSameAnswer(t, want, got, what)
			for _, p := range []string{leanOld, fullOld} {
				_, err := os.Stat(p)
				assert.ErrorIs(t, err, os.ErrNotExist, "%s: the state directory's cleanup removed %s", what, p)
				_, err = os.Stat(filepath.Join(filepath.Dir(p), ".last-cleanup"))
				assert.NoError(t, err, "%s: the cleanup's marker", what)
			}
			answered++
		}
	}
	assert.GreaterOrEqual(t, answered, 3, "golden ignored events (Claude Code's and Copilot CLI's Notification, Gemini CLI's PreCompress)")

	notification := []byte(`{"session_id":"s","hook_event_name":"Notification","message":"m"}`)
	t.Run("--keep-days 0 keeps every session, as the full hook does", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "st")
		old := oldSession(state)
		got := runLean([]string{"claude-code", "--state-dir", state, "--keep-days", "0"}, notification)
		assert.True(t, got.local)
		assert.Equal(t, answer{local: true}, got)
		assert.FileExists(t, old)
	})
	t.Run("what it cannot prove goes to the full hook", func(t *testing.T) {
		state := t.TempDir()
		for _, c := range []struct {
			what string
			args []string
			ev   string
		}{
			{"a call", []string{"claude-code"}, `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`},
			{"not JSON", []string{"claude-code"}, `{"hook_event_name":"Notification"`},
			{"a field of another type", []string{"claude-code"}, `{"hook_event_name":"Notification","session_id":7}`},
			{"an event the table does not list", []string{"claude-code"}, `{"session_id":"s","hook_event_name":"FutureEvent"}`},
			{"a host the table does not know", []string{"vim"}, string(notification)},
			{"a forwarding flag", []string{"claude-code", "--server", "http://127.0.0.1:1"}, string(notification)},
			{"a decision log", []string{"claude-code", "--decision-log", filepath.Join(state, "log")}, string(notification)},
			{"a flag it does not know", []string{"claude-code", "--verbose"}, string(notification)},
			{"a bad flag value", []string{"claude-code", "--timeout", "0s"}, string(notification)},
		} {
			got := runLean(append(c.args, "--state-dir", state), []byte(c.ev))
			assert.False(t, got.local, c.what)
			assert.Equal(t, 2, got.exit, c.what)
			assert.Contains(t, got.stderr, "no celguard beside", c.what)
		}
	})
}

// staleOrReloaded checks the first call after a bundle change: the lean
// client finds the daemon's manifest stale and hands the call on, unless the
// daemon, which watches the same files, has already read the change (under
// load or -race it may have, before the call), in which case its answer,
// which the caller checks against the in-process one, is the new one.
func staleOrReloaded(t *testing.T, a answer, what string) {
	t.Helper()
	if a.daemon {
		t.Logf("%s: the daemon had already read the change", what)
		return
	}
	assert.Contains(t, a.why, "the policies changed", what+": the manifest is stale")
}

// heldSource is a bundle source that serves one signed archive.
type heldSource struct{ archive, envelope []byte }

func (s heldSource) Fetch(context.Context, string, bundle.Limits) (*bundle.Fetched, error) {
	return &bundle.Fetched{Archive: s.archive, Envelope: s.envelope, Tag: "t"}, nil
}

func (heldSource) String() string { return "held" }

// TestLeanClientFollowsTheBundle is issue 26's bundle cliff: with a signed
// bundle in force the daemon's answers carry a manifest of what the bundle
// configuration consults, so the lean client uses them; another bundle put
// in force, or the bundles file edited, decides the next call through the
// lean client exactly as `celguard hook` decides it in process, and the
// daemon answers again once it has read them.
func TestLeanClientFollowsTheBundle(t *testing.T) {
	f := newLeanFixture(t)
	f.args = []string{"--state-dir", f.state} // every layer, the bundles with them
	cfgDir := filepath.Join(f.home, ".config", "celguard")
	require.NoError(t, os.MkdirAll(cfgDir, 0o700))
	priv, pub, err := bundle.GenerateKey()
	require.NoError(t, err)
	key, err := bundle.ParseKey(priv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "team.pub"), pub, 0o644))
	_, other, err := bundle.GenerateKey()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "other.pub"), other, 0o644))
	store := filepath.Join(f.home, "bundles")
	conf := func(keyFile string) []byte {
		return []byte(`{"bundles":[{"name":"team","source":"https://127.0.0.1:1/team","keys":["` + keyFile +
			`"],"mandatory":true,"interval":"1h","state_dir":"` + store + `"}]}`)
	}
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "bundles.json"), conf("team.pub"), 0o644))
	put := func(serial uint64, command string) {
		t.Helper()
		dir := t.TempDir()
		policy := strings.NewReplacer("make deploy", command, "no-deploy", "team-rule", "deploy_refused", fmt.Sprintf("team_v%d", serial)).Replace(deployPolicy)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(policy), 0o644))
		b, err := bundle.Build(context.Background(), dir, bundle.BuildOptions{Name: "team", Version: fmt.Sprintf("v%d", serial), Serial: serial, Layer: "user"})
		require.NoError(t, err)
		env, err := bundle.Sign(context.Background(), b, nil, key)
		require.NoError(t, err)
		envJSON, err := json.Marshal(env)
		require.NoError(t, err)
		bcs, err := bundle.LoadConfig(filepath.Join(cfgDir, "bundles.json"))
		require.NoError(t, err)
		st, err := bcs[0].Store()
		require.NoError(t, err)
		_, err = st.Update(context.Background(), heldSource{b.Archive, envJSON})
		require.NoError(t, err)
	}
	put(1, "make v1-only")

	ev := []byte(`{"session_id":"bundle","cwd":"` + f.repo + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":"t1"}`)
	refState := t.TempDir()
	// The daemon's first pull (its source is down) rewrites the store's
	// file after its first read: the next read of the project's sources,
	// two seconds on, records it.
	untilDaemon := func() answer {
		t.Helper()
		for range 60 {
			if a := f.hook("claude-code", ev); a.daemon {
				return a
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Fatal("the daemon's answers were never used with the bundle in force")
		return answer{}
	}
	f.hook("claude-code", ev)
	f.waitDaemon()
	v1 := untilDaemon()
	assertSameAnswer(t, f.inProcess("claude-code", ev, refState), v1, "bundle v1")
	require.NotContains(t, v1.stdout, "deny")

	put(2, "npm test")
	v2 := f.hook("claude-code", ev)
	staleOrReloaded(t, v2, "another bundle in force")
	assert.Contains(t, v2.stdout, "team_v2", "decided with bundle v2")
	assertSameAnswer(t, f.inProcess("claude-code", ev, refState), v2, "bundle v2")
	again := untilDaemon()
	assert.Contains(t, again.stdout, "team_v2")

	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "bundles.json"), conf("other.pub"), 0o644))
	edited := f.hook("claude-code", ev)
	staleOrReloaded(t, edited, "the bundles file edited")
	assert.Contains(t, edited.stdout, "bundle_unavailable", "no bundle verifies with the key now named, and it is mandatory")
	assertSameAnswer(t, f.inProcess("claude-code", ev, refState), edited, "bundles file edited")
	again = untilDaemon()
	assert.Contains(t, again.stdout, "bundle_unavailable")
}
