package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/serve/client"
	"github.com/celguard/celguard/store/statedir"
	"github.com/celguard/celguard/telemetry"
)

// DefaultDaemonIdle is how long the decision daemon waits for an event
// before it stops.
const DefaultDaemonIdle = 30 * time.Minute

// daemonConnectTimeout bounds the hook's wait to reach the daemon's
// socket; past it the hook decides in process.
const daemonConnectTimeout = 200 * time.Millisecond

// spawnDaemon starts the daemon process; tests replace it (the test binary
// is not celguard).
var spawnDaemon = startDetached

// onInProcess, when set, is called for every event the hook decides in
// this process rather than in the daemon (tests count them); onRefused
// with why the daemon's answer was not used.
var (
	onInProcess func()
	onRefused   func(why string)
)

// refused says why the daemon's answer was not used (to onRefused).
func refused(why string) (hooks.Response, bool) {
	if onRefused != nil {
		onRefused(why)
	}
	return hooks.Response{}, false
}

// daemonTelemetryEnv is the telemetry environment of this process, as
// NAME=VALUE sorted: CELGUARD_TELEMETRY and every OTEL_* variable, none
// when telemetry is off. It is part of the daemon's id, since the daemon
// exports with the environment it was started with (its endpoint, headers,
// protocol, service name, sampler); the per-call trace context and agent
// version travel with each request instead.
func daemonTelemetryEnv() []string {
	if !telemetry.Enabled(nil) {
		return nil
	}
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "CELGUARD_TELEMETRY=") {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// daemonClient is the hook's side of the user's decision daemon: the one
// for this state directory and these hook options.
type daemonClient struct {
	p      hookParams
	store  *statedir.Dir
	socket string
	exe    string
	args   []string // the daemon's command line after the binary
}

// daemon returns the client of the daemon for p's options, or nil when the
// hook decides in process: the daemon is off, the platform has no unix
// sockets with owners, or a decision log is asked for (its records name
// the hook process itself: who is this process's repository). Telemetry
// goes through the daemon: the daemon of a telemetry environment is one of
// its own (daemonTelemetryEnv is in its id) and exports for the hook, each
// decision with the hook's trace context, repository, host and version.
func (p hookParams) daemon(store *statedir.Dir) *daemonClient {
	if daemonwire.Off(p.noDaemon) || !daemonSupported || p.decisions.logPath != "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil
	}
	opts := p.hookOptions
	opts.stateDir = store.Dir
	if err := opts.absolute(); err != nil {
		return nil
	}
	args := append(opts.args(), "--timeout", p.timeout.String(), "--keep-days", strconv.Itoa(p.keepDays),
		"--max-state-bytes", strconv.FormatInt(p.maxStateBytes, 10))
	// The environment the layers are found by, and the one a decision
	// reads (daemonwire.IDEnv): a hook run with another has another daemon.
	// And the telemetry environment: a hook exporting elsewhere (or not
	// at all) has another daemon.
	id := daemonwire.ID(append(append(append([]string{exe}, daemonwire.IDEnv(os.Getenv)...), args...), daemonTelemetryEnv()...)...)
	socket, err := daemonwire.Socket(store.Dir, id)
	if err != nil {
		return nil
	}
	return &daemonClient{p: p, store: store, socket: socket, exe: exe,
		args: append([]string{"hook", "daemon", "--socket", socket}, args...)}
}

// ask sends the event to the daemon and returns its answer; ok is false
// when the hook must decide in process: no daemon answers, the socket's
// directory is not the user's own, the answer does not carry a valid MAC
// over this call's nonce under the state key (something else took the
// socket), or it was decided with another policy digest than this process
// would decide with.
func (c *daemonClient) ask(ctx context.Context, host hooks.Host, input []byte) (hooks.Response, bool) {
	if err := daemonwire.CheckDir(filepath.Dir(c.socket), false); err != nil {
		return refused("directory: " + err.Error())
	}
	key, err := c.store.Key()
	if err != nil {
		return refused("key: " + err.Error())
	}
	nonce, err := daemonwire.NewNonce()
	if err != nil {
		return hooks.Response{}, false
	}
	want, err := c.want(host, input)
	if err != nil {
		return refused("digest: " + err.Error())
	}
	wd, _ := os.Getwd()
	ctx, cancel := context.WithTimeout(ctx, c.p.timeout+2*time.Second)
	defer cancel()
	p := daemonwire.HookParams{Nonce: nonce, Host: host.Name(), WorkDir: wd, Digest: want, Event: input}
	if telemetry.Enabled(nil) {
		// The hook's trace and agent version, for the daemon's telemetry
		// (daemonwire.HookParams).
		if p.TraceParent = os.Getenv("TRACEPARENT"); p.TraceParent != "" {
			p.TraceState = os.Getenv("TRACESTATE")
		}
		p.AgentVersion = os.Getenv("CELGUARD_AGENT_VERSION")
	}
	// The JSON-RPC wire on the daemon's socket, as the lean client asks
	// (daemonwire.Call).
	res, err := daemonwire.Call(ctx, c.socket, p)
	if err != nil {
		return refused("no answer: " + err.Error())
	}
	if !daemonwire.Verify(key, res.MAC, res.Answer(p)) {
		return refused("the answer's MAC does not check")
	}
	if want != "" && res.Digest != want {
		return refused("policy digest " + res.Digest + ", want " + want)
	}
	a, err := client.ParseCommandAnswer(res.Body)
	if err != nil {
		return refused("not a hook answer: " + err.Error())
	}
	return hooks.Response{Stdout: []byte(a.Stdout), Stderr: a.Stderr, Exit: a.Exit}, true
}

// want is the policy digest this process would decide the event with
// (the sources read, not compiled), or "" for an event decided without
// policies (one celguard ignores, a session's end, one that does not
// decode).
func (c *daemonClient) want(host hooks.Host, input []byte) (string, error) {
	ev, err := host.Decode(input)
	if err != nil || ev.Kind == hooks.KindIgnore || ev.Kind == hooks.KindSessionEnd {
		return "", nil
	}
	cfg, err := engineConfig(c.p.policies, c.p.decisions)
	if err != nil {
		return "", err
	}
	d, err := cfg.Select()
	if err != nil {
		return "", err
	}
	return compile.Digest(d.Sources), nil
}

// start starts the daemon, detached, for the next call: it makes the
// socket's directory (0700) and leaves the rest to the daemon, which
// exits at once when another one holds the socket.
func (c *daemonClient) start() {
	if err := daemonwire.CheckDir(filepath.Dir(c.socket), true); err != nil {
		return
	}
	if _, err := os.Stat(c.socket); err == nil {
		// Something listens there, and did not prove itself (or the
		// socket is left over): a daemon started now would find it.
		if conn, err := net.DialTimeout("unix", c.socket, daemonConnectTimeout); err == nil {
			conn.Close()
			return
		}
	}
	_ = spawnDaemon(c.exe, c.args)
}

// hookDaemonParams is what `celguard hook daemon` was asked to do.
type hookDaemonParams struct {
	hookParams
	socket string
	idle   time.Duration
}

func newHookDaemonCmd(sio stdio) *cobra.Command {
	var p hookDaemonParams
	cmd := &cobra.Command{
		Use:   "daemon --socket PATH [hook flags]",
		Short: "The user's decision daemon that celguard hook starts and asks first",
		Long: `Daemon is the user's decision daemon: celguard serve on a unix socket in the
state directory, answering every hook event exactly as 'celguard hook' would
decide it in process, with the same policies (the project layer of the hook's
working directory), the same state files and the same answers. 'celguard hook'
starts it, detached, when it finds none, with its own flags, and trusts an
answer only when it carries an HMAC over the hook's fresh nonce under the state
directory's key. It stops after --idle without an event, when its socket is
removed, or when its binary changes (the next hook starts the new one).

You do not run it yourself; see docs/hooks.md, "The decision daemon".
CELGUARD_DAEMON=off or 'celguard hook --no-daemon' turns it off.`,
		Example: `  # What celguard hook starts (its own flags after --socket); you do not run it
  celguard hook daemon --socket ~/.local/state/celguard/daemon/0123456789abcdef.sock --state-dir ~/.local/state/celguard

  # Decide every event in process instead
  CELGUARD_DAEMON=off celguard hook claude-code < event.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.stdio = sio
			return status(runHookDaemon(cmd.Context(), p))
		},
	}
	f := cmd.Flags()
	p.addFlags(f)
	f.DurationVar(&p.timeout, "timeout", hooks.DefaultTimeout, "as for celguard hook")
	f.IntVar(&p.keepDays, "keep-days", int(statedir.DefaultMaxAge/(24*time.Hour)), "as for celguard hook")
	f.Int64Var(&p.maxStateBytes, "max-state-bytes", statedir.DefaultMaxStateBytes, "as for celguard hook")
	f.StringVar(&p.socket, "socket", "", "the unix socket to answer on (in the state directory's daemon/, mode 0700)")
	f.DurationVar(&p.idle, "idle", DefaultDaemonIdle, "stop after this long without an event")
	_ = cmd.MarkFlagRequired("socket")
	return cmd
}

// runHookDaemon runs the daemon until it is idle, stale, its socket is
// gone, or SIGINT or SIGTERM.
func runHookDaemon(ctx context.Context, p hookDaemonParams) int {
	fail := func(err error) int {
		fmt.Fprintf(p.stderr, "celguard hook daemon: %v\n", err)
		return exitUsage
	}
	store, lock, err := p.open()
	if err != nil {
		return fail(err)
	}
	if lock == nil {
		return exitOK // another daemon answers on this socket
	}
	defer lock.Close()
	scfg, started, err := p.serveConfig(store)
	if err != nil {
		return fail(err)
	}
	ln, sockInfo, err := listenDaemon(p.socket)
	if err != nil {
		return fail(err)
	}
	defer removeDaemonSocket(p.socket, sockInfo)
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	scfg.Started = func(srv *serve.Server) {
		started(srv)
		go stopWhenGone(ctx, srv, p.socket, sockInfo)
	}
	if err := serve.Run(ctx, []net.Listener{ln}, scfg); err != nil {
		return fail(err)
	}
	return exitOK
}

// open checks the daemon's flags and directory, and takes the socket's
// lock: a nil lock and no error mean another daemon answers on it.
func (p hookDaemonParams) open() (*statedir.Dir, io.Closer, error) {
	if !daemonSupported {
		return nil, nil, errors.New("the decision daemon needs unix sockets and file owners")
	}
	if _, err := p.host("claude-code"); err != nil { // checks the flags
		return nil, nil, err
	}
	store, err := p.stateStore()
	if err != nil {
		return nil, nil, err
	}
	if err := daemonwire.CheckDir(filepath.Dir(p.socket), true); err != nil {
		return nil, nil, err
	}
	lock, err := lockDaemon(p.socket + ".lock")
	if err != nil || lock == nil {
		return nil, nil, err
	}
	return store, lock, nil
}

// serveConfig is the daemon's server: the hook's configuration with a
// project per working directory, answers signed with the state key, and
// stale once the celguard binary changes. started must be called with the
// server before it answers.
func (p hookDaemonParams) serveConfig(store *statedir.Dir) (serve.Config, func(*serve.Server), error) {
	key, err := store.Key()
	if err != nil {
		return serve.Config{}, nil, err
	}
	cfg, _, err := hookConfig(p.policies, p.decisions, store)
	if err != nil {
		return serve.Config{}, nil, err
	}
	cfg.PerProject = true
	cfg.Manifests = true // for the lean client (cmd/celguard-hook)
	if cfg.Telemetry != nil {
		// The daemon exports for every hook that asks it: the resource says
		// this machine and user, each decision its hook's repository, host,
		// version and trace (decide); not the trace of the hook that
		// started it. It flushes at exit as serve does.
		tc := *cfg.Telemetry
		tc.TraceParent, tc.TraceState = "", ""
		tc.Who = telemetry.Who{Machine: tc.Who.Machine, User: tc.Who.User}
		tc.FlushTimeout = 5 * time.Second
		cfg.Telemetry = &tc
	}
	exe, err := os.Executable()
	if err != nil {
		return serve.Config{}, nil, err
	}
	exeInfo, err := os.Stat(exe)
	if err != nil {
		return serve.Config{}, nil, err
	}
	var guard *celguard.Guard
	joined := &joinedManifests{}
	d := &serve.Daemon{Key: key, IdleExit: p.idle,
		Decide: func(ctx context.Context, host hooks.Host, event []byte, workDir, want string) (hooks.Response, string, string) {
			return p.decide(ctx, guard, store, joined, host.Name(), event, workDir, want)
		},
		Stale: func() error {
			fi, err := os.Stat(exe)
			if err != nil || !os.SameFile(fi, exeInfo) || fi.ModTime() != exeInfo.ModTime() || fi.Size() != exeInfo.Size() {
				return fmt.Errorf("the celguard binary %s changed", exe)
			}
			return nil
		}}
	log := slog.New(slog.NewTextHandler(p.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scfg := serve.Config{Engine: cfg, Version: currentBuild().String(), Store: "file://" + store.Dir, Logger: log,
		Timeout: p.timeout + time.Second, Daemon: d}
	return scfg, func(srv *serve.Server) { guard = srv.Guard() }, nil
}

// listenDaemon listens on the daemon's socket, readable and writable by
// the user only, and returns what it is, so that only this socket is
// removed at the end.
func listenDaemon(socket string) (net.Listener, os.FileInfo, error) {
	_ = os.Remove(socket) // left by a daemon that died: the lock says none runs
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(socket, 0o600); err != nil {
		ln.Close()
		return nil, nil, err
	}
	info, err := os.Stat(socket)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, info, nil
}

// removeDaemonSocket removes socket if it is still the one this daemon
// listened on.
func removeDaemonSocket(socket string, info os.FileInfo) {
	if fi, err := os.Stat(socket); err == nil && os.SameFile(fi, info) {
		_ = os.Remove(socket)
	}
}

// decide answers one event as `celguard hook` run in workDir decides it
// in process: the same Runner on the same state directory, with the
// engine of workDir's project, and the same warnings on stderr. digest
// names the set that decided; "" when it could not be made (the hook then
// decides in process, and answers with the error itself). manifest is
// what that set was read from (daemonwire.HeaderManifest): "" when no
// policy was used, daemonwire.NoManifest when the daemon cannot say (no
// manifest, or another set was put in force while the event was decided).
func (p hookDaemonParams) decide(ctx context.Context, guard *celguard.Guard, store *statedir.Dir, joined *joinedManifests, hostName string, event []byte, workDir, want string) (resp hooks.Response, digest, manifest string) {
	host, err := p.host(hostName)
	if err != nil {
		return hooks.Response{Stderr: err.Error(), Exit: 1}, "", ""
	}
	if guard.Telemetry() != nil {
		ctx = telemetry.WithWho(ctx, telemetry.WhoAmI(workDir, hostName, serve.DaemonAgentVersion(ctx)))
	}
	g, gerr := guard.ForWorkDir(workDir, want)
	var before *daemonwire.Manifest
	var beforeDigest string
	var call *daemonwire.Manifest
	if gerr == nil {
		before, beforeDigest = g.SourcesManifest()
		call = callManifest(workDir)
	}
	used := false
	r := p.runner(host, store, func() (*eval.Engine, error) {
		used = true
		if gerr != nil {
			return nil, hookLoadError(gerr)
		}
		return g.Engine(), nil
	})
	resp = r.Run(ctx, event)
	manifest = daemonwire.NoManifest
	if !used {
		manifest = ""
	}
	if gerr != nil {
		return resp, "", manifest
	}
	if used {
		var b strings.Builder
		printWarnings(&b, "celguard hook", hookWarnings(g, p.decisions))
		resp.Stderr += b.String()
		if after, afterDigest := g.SourcesManifest(); before != nil && after == before && afterDigest == beforeDigest {
			manifest = joined.encode(before, call)
		}
	}
	return resp, g.Digest(), manifest
}

// joinedManifests remembers, per set manifest, the last call manifest
// joined to it and the encoding of the two (daemonwire.Join, Encode):
// the calls of one working directory join the same two again and again. A
// set's manifest is never changed once made, so the same pointer holds
// the same entries; a call's is compared by its roots and the sum of its
// entries (Manifest.Equal).
type joinedManifests struct {
	mu   sync.Mutex
	last map[*daemonwire.Manifest]joinedManifest
}

type joinedManifest struct {
	call    *daemonwire.Manifest
	encoded string
}

// maxJoined bounds the set manifests joinedManifests remembers (a set
// put in force replaces its project's).
const maxJoined = 64

// encode is daemonwire.Join(set, call).Encode().
func (j *joinedManifests) encode(set, call *daemonwire.Manifest) string {
	if set == nil || call == nil || set.Entries == nil || call.Entries == nil {
		return daemonwire.Join(set, call).Encode()
	}
	j.mu.Lock()
	last, ok := j.last[set]
	j.mu.Unlock()
	if ok && last.call.Equal(call) {
		return last.encoded
	}
	encoded := daemonwire.Join(set, call).Encode()
	j.mu.Lock()
	if j.last == nil || len(j.last) >= maxJoined {
		j.last = map[*daemonwire.Manifest]joinedManifest{}
	}
	j.last[set] = joinedManifest{call: call, encoded: encoded}
	j.mu.Unlock()
	return encoded
}

// callManifest is the snapshot of what finds workDir's project: where
// workDir resolves, and the .git entries from it up to the project root
// (policies.ProjectWalk); nil when workDir is not an absolute path.
func callManifest(workDir string) *daemonwire.Manifest {
	if workDir == "" || !filepath.IsAbs(workDir) {
		return nil
	}
	_, checked, err := policies.ProjectWalk(workDir)
	if err != nil {
		return nil
	}
	roots := []daemonwire.Root{{Path: workDir}}
	for _, c := range checked {
		roots = append(roots, daemonwire.Root{Path: c})
	}
	m, err := daemonwire.Snapshot(roots)
	if err != nil {
		return nil
	}
	return m
}

// stopWhenGone stops the daemon once its socket is removed or replaced.
func stopWhenGone(ctx context.Context, srv *serve.Server, socket string, mine os.FileInfo) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if fi, err := os.Stat(socket); err != nil || !os.SameFile(fi, mine) {
				srv.Stop()
				return
			}
		}
	}
}

// doctorDaemon reports the decision daemons of the default state
// directory: off, not running, or running with their version and the
// digest of the set they decide with (their /v1/status). It never fails
// the doctor: without a daemon every event is decided in process.
func doctorDaemon(sio stdio) {
	fmt.Fprintln(sio.stdout, "decision daemon")
	if daemonwire.Off(false) {
		fmt.Fprintln(sio.stdout, "  ok    off (CELGUARD_DAEMON): every event is decided in process")
		return
	}
	if !daemonSupported {
		fmt.Fprintln(sio.stdout, "  ok    none on this platform: every event is decided in process")
		return
	}
	state, err := statedir.DefaultStateDir()
	if err != nil {
		fmt.Fprintf(sio.stdout, "  warn  %v\n", err)
		return
	}
	dir := filepath.Join(state, daemonwire.DirName)
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	if len(socks) == 0 {
		fmt.Fprintln(sio.stdout, "  ok    not running: the next hook call starts it (docs/hooks.md, \"The decision daemon\")")
		return
	}
	if err := daemonwire.CheckDir(dir, false); err != nil {
		fmt.Fprintf(sio.stdout, "  warn  %v: the hooks decide every event in process\n        fix: remove %s; the next hook call makes it again (0700)\n", err, dir)
		return
	}
	for _, sock := range socks {
		st, err := daemonStatus(sock)
		if err != nil {
			fmt.Fprintf(sio.stdout, "  ok    %s: not running (%v); the next hook call starts it\n", sock, err)
			continue
		}
		fmt.Fprintf(sio.stdout, "  ok    running on %s: celguard %s, policy digest %s, %d hook events answered\n", sock, st.Version, st.PolicyDigest, st.DaemonAnswers)
	}
}

// daemonStatus asks the daemon on sock for its status.
func daemonStatus(sock string) (serve.AgentStatus, error) {
	var st serve.AgentStatus
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: daemonConnectTimeout}
			return d.DialContext(ctx, "unix", sock)
		}}}
	res, err := hc.Get("http://celguard-daemon/v1/status")
	if err != nil {
		return st, errors.Unwrap(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return st, json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&st)
}
