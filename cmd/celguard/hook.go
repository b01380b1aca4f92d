package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/hooks/setup"
	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib/shell"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// maxHookInput bounds the event read from stdin; a larger one fails (closed
// by default) rather than exhausting memory.
const maxHookInput = 64 << 20

// hookOptions are the options of `celguard hook HOST` that `celguard hook
// install HOST` passes on to the command it installs.
type hookOptions struct {
	policies selection // --policy, --bundle, --include, --exclude
	stateDir string
	failOpen bool
	approve  bool
	// decisions are --decision-log and its options, and --monitor.
	decisions decisionOptions
	forward   forwardOptions // --server, --token-file, --server-timeout
	// noDaemon decides every event in this process (--no-daemon, or
	// CELGUARD_DAEMON=off).
	noDaemon bool
}

// addFlags declares the policy selection, --state-dir, --fail-open and
// --approve.
func (o *hookOptions) addFlags(f *pflag.FlagSet) {
	o.policies.addFlags(f)
	f.StringVar(&o.stateDir, "state-dir", "", "where session state is kept (default: $XDG_STATE_HOME/celguard or ~/.local/state/celguard)")
	f.BoolVar(&o.failOpen, "fail-open", false, "let calls through when celguard itself fails (default: block them)")
	f.BoolVar(&o.approve, "approve", false, "an allow by an explicit rule approves the call, skipping the host's own permission prompt (Claude Code, Gemini CLI)")
	o.decisions.addFlags(f)
	o.forward.addFlags(f)
	f.BoolVar(&o.noDaemon, "no-daemon", false, "decide every event in this process: neither ask the user's decision daemon nor start one (CELGUARD_DAEMON=off does the same; docs/hooks.md)")
}

// args are the flags that give o, as a command line would give them.
func (o hookOptions) args() []string {
	out := o.policies.args()
	if o.stateDir != "" {
		out = append(out, "--state-dir", o.stateDir)
	}
	if o.failOpen {
		out = append(out, "--fail-open")
	}
	if o.approve {
		out = append(out, "--approve")
	}
	out = append(out, o.decisions.args()...)
	if o.noDaemon {
		out = append(out, "--no-daemon")
	}
	return append(out, o.forward.args()...)
}

// absolute makes o's paths (--policy, --user-dir, --project-dir,
// --state-dir) absolute: the host runs the installed command from wherever
// the agent happens to be, not from where install ran.
func (o *hookOptions) absolute() error {
	abs := func(p *string) error {
		if *p == "" || *p == "-" || filepath.IsAbs(*p) {
			return nil
		}
		a, err := filepath.Abs(*p)
		*p = a
		return err
	}
	o.policies.paths = slices.Clone(o.policies.paths)
	for i := range o.policies.paths {
		if err := abs(&o.policies.paths[i]); err != nil {
			return err
		}
	}
	for _, p := range []*string{&o.policies.userDir, &o.policies.projectDir, &o.stateDir, &o.forward.tokenFile} {
		if err := abs(p); err != nil {
			return err
		}
	}
	return nil
}

// hookParams is what `celguard hook HOST` was asked to do.
type hookParams struct {
	hookOptions
	timeout       time.Duration
	keepDays      int
	maxStateBytes int64
	stdio
}

func newHookCmd(sio stdio) *cobra.Command {
	var p hookParams
	cmd := &cobra.Command{
		Use:   "hook HOST < EVENT",
		Short: "Answer one hook event of Claude Code, Codex, Gemini CLI, Cursor, Copilot CLI or OpenCode",
		Long: `Hook is the command an agent host runs for every hook event. It reads one
event from stdin in the host's format, decides it with the policies and writes
exactly what the host expects on stdout, stderr and the exit code. HOST is
claude-code, codex, gemini, cursor, copilot or opencode (the command
celguard's OpenCode plugin runs).

--policy, --bundle, --include and --exclude choose the policies as they do
for eval, lint and test: with none of them, every layer decides (the
recommended built-in bundle, the user's policies and the project's
.celguard/); with --policy alone, only those files; --bundle, --include or
--exclude layer the --policy files over the others.

Counters, the turn, a halt and remembered approvals are kept per session in
the state directory ($XDG_STATE_HOME/celguard, or ~/.local/state/celguard),
one file per session, locked while a hook uses it, so that they survive from
one hook process to the next. A new user prompt starts a turn; the end of a
session removes its state; state untouched for --keep-days is removed. State
files and cached expressions carry an HMAC under the directory's key file: a
state file changed outside celguard drops its approvals and reads its
counters at their ceiling until they reset (state_tampered), and a changed
cache entry is checked again.

Every verdict maps to the strongest answer the host can express: an ask on a
host without one (Codex, Gemini CLI) is a block that names an approval request
the user answers with 'celguard approve ID' (docs/approvals.md), a rewrite the
host cannot apply is a block. Rules that name a judge read the judges of
~/.config/celguard/judges.json and /etc/celguard/judges.json. If celguard itself fails (an event
it cannot read, policies that do not compile, unreadable state, --timeout),
it answers a tool call with what the host honours as a block; --fail-open
lets the call through instead. A new prompt goes through with a warning that
names the problem and its fix. See docs/hooks.md for the answer to every
verdict per host.

With --server URL the event is forwarded to a running 'celguard serve'
(docs/serve.md), which decides it with its policies and its sessions; this
process compiles nothing and keeps no state. A server that is down, slower
than --server-timeout, or answers anything but a hook answer is a failure:
a block, unless --fail-open.

Set it up with 'celguard hook install HOST' (with --server URL for the
forwarding form), check it with 'celguard doctor'.`,
		Example: `  # What Claude Code runs (configured by 'celguard hook install claude-code')
  celguard hook claude-code < event.json

  # Your own policies, state in a directory of your choice
  celguard hook codex --policy ~/.config/celguard/policies --state-dir /tmp/celguard

  # Ask the machine's celguard serve instead
  celguard hook claude-code --server http://127.0.0.1:9743 < event.json`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: hooks.Hosts(),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			return status(runHook(cmd.Context(), args[0], p))
		},
	}
	f := cmd.Flags()
	p.addFlags(f)
	f.DurationVar(&p.timeout, "timeout", hooks.DefaultTimeout, "give up (and fail) after this long waiting for the session lock and the decision")
	f.IntVar(&p.keepDays, "keep-days", int(statedir.DefaultMaxAge/(24*time.Hour)), "remove the state of sessions untouched for this many days (0: never)")
	f.Int64Var(&p.maxStateBytes, "max-state-bytes", statedir.DefaultMaxStateBytes, "the largest session state file read or written; past it the hook fails")
	cmd.AddCommand(newHookInstallCmd(sio), newHookDaemonCmd(sio))
	return cmd
}

func runHook(ctx context.Context, hostName string, p hookParams) int {
	host, err := p.host(hostName)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard hook: %v\n", err)
		return exitUsage
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var done hookDone
	resp := p.respond(ctx, host, &done)
	_, _ = p.stdout.Write(resp.Stdout)
	_, _ = io.WriteString(p.stderr, resp.Stderr)
	// After the host's own stderr, which some hosts show the agent as the
	// reason for a block; stdout stays the host's answer alone.
	printWarnings(p.stderr, "celguard hook", done.warnings)
	// After the answer is written: the telemetry export's flush, bounded
	// (telemetry.DefaultFlushTimeout), never delays the decision.
	if done.closeGuard != nil {
		done.closeGuard()
	}
	// After the answer too: the daemon this call did not find.
	if done.startDaemon != nil {
		done.startDaemon()
	}
	return resp.Exit
}

// hookDone is what making the engine left for after the answer: the
// layers' warnings, the close of the guard the engine is of, and the
// start of the decision daemon.
type hookDone struct {
	warnings    []string
	closeGuard  func()
	startDaemon func()
}

// host checks the flags and returns the host's protocol, whose refusals
// name the approve command of this state directory.
func (p hookParams) host(name string) (hooks.Host, error) {
	approveCmd := "celguard approve"
	if p.stateDir != "" {
		approveCmd += " --state-dir " + shell.Quote(p.stateDir)
	}
	host, err := hooks.New(name, hooks.Options{Approve: p.approve, ApproveCommand: approveCmd})
	switch {
	case err != nil:
		return nil, err
	case p.timeout <= 0:
		return nil, fmt.Errorf("--timeout must be positive, got %s", p.timeout)
	case p.keepDays < 0 || p.maxStateBytes <= 0:
		return nil, errors.New("--keep-days must be 0 or more and --max-state-bytes positive")
	}
	return host, nil
}

// respond reads the event from stdin and answers it: forwarded to the
// server with --server, else decided here with the state directory's
// sessions (hooks.Runner). Every failure is the host's failure answer,
// closed unless --fail-open. done receives what is left for after the
// answer.
func (p hookParams) respond(ctx context.Context, host hooks.Host, done *hookDone) hooks.Response {
	input, err := io.ReadAll(io.LimitReader(p.stdin, maxHookInput+1))
	if err == nil && len(input) > maxHookInput {
		err = fmt.Errorf("the event is larger than %d bytes", maxHookInput)
	}
	if err != nil {
		return host.Fail(hooks.Event{}, "cannot read the event from stdin: "+err.Error(), p.failOpen)
	}
	if p.forward.server != "" {
		if p.decisions.logPath != "" || p.decisions.monitor {
			// The server decides and logs: a log asked of this process would
			// stay empty.
			return host.Fail(hooks.Event{}, "--decision-log and --monitor are the server's with --server (celguard serve --decision-log FILE)", p.failOpen)
		}
		return p.forward.run(ctx, host, input, p.failOpen)
	}
	sd, err := p.stateStore()
	if err != nil {
		return host.Fail(hooks.Event{}, err.Error(), p.failOpen)
	}
	if d := p.daemon(sd); d != nil {
		// The user's decision daemon, when one answers and proves itself;
		// else this process decides, and starts one for the next call.
		if resp, ok := d.ask(ctx, host, input); ok {
			return resp
		}
		done.startDaemon = d.start
	}
	if onInProcess != nil {
		onInProcess()
	}
	r := p.runner(host, sd, func() (*eval.Engine, error) {
		dopts := p.decisions
		dopts.agentHost = host.Name()
		eng, closer, ws, err := hookEngine(p.policies, dopts, sd)
		done.warnings, done.closeGuard = ws, closer
		return eng, err
	})
	return r.Run(ctx, input)
}

// stateStore is the state directory the flags name: the one the lean
// client (cmd/celguard-hook) cleans up for the events it answers itself,
// so both read the flags through daemonwire.HookArgs.StateStore.
func (p hookParams) stateStore() (*statedir.Dir, error) {
	return daemonwire.HookArgs{StateDir: p.stateDir, MaxStateBytes: p.maxStateBytes, KeepDays: p.keepDays}.StateStore()
}

// runner is the hook's Runner for one event of host: the one way an event
// is decided here, in this process or in the user's decision daemon
// (daemon.go), so that both answer alike on the same state.
func (p hookParams) runner(host hooks.Host, sd *statedir.Dir, engine func() (*eval.Engine, error)) *hooks.Runner {
	return &hooks.Runner{Host: host, Store: sd, FailOpen: p.failOpen, Timeout: p.timeout, Engine: engine}
}

// hookEngine loads and compiles the policies.
//
// Checked expressions are cached in the state directory: a hook runs one
// process per event, and parsing and type-checking the policies is most of
// a compile. The cache never decides: its entries are authenticated with the
// state key, one that fails its check is a miss, and a miss only costs time.
// A state key that cannot be used fails the hook (closed, by default).
//
// Sessions are kept in the state directory through the file store
// (store.NewFileDir as the Config's Store): the engine commits every
// change of a session there, as serve's engine does to its store.
//
// The warnings are layerWarnings, for stderr.
func hookEngine(sel selection, dopts decisionOptions, sd *statedir.Dir) (*eval.Engine, func(), []string, error) {
	cfg, cache, err := hookConfig(sel, dopts, sd)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Telemetry != nil {
		// One event per process: small export queues, which the SDK
		// allocates whole when it opens them (the default's 2048 log
		// records are about 1.3 MB).
		tc := *cfg.Telemetry
		tc.QueueSize = hookTelemetryQueue
		cfg.Telemetry = &tc
	}
	guard, err := cfg.Load(context.Background())
	_ = cache.Save() // best effort: the next process compiles without it
	if err != nil {
		return nil, nil, nil, hookLoadError(err)
	}
	return guard.Engine(), func() { _ = guard.Close() }, hookWarnings(guard, dopts), nil
}

// hookTelemetryQueue bounds a hook process's telemetry queues: it decides
// one event (a span, a judge's and its commits' child spans, one record).
const hookTelemetryQueue = 32

// hookConfig is the composition root's configuration of the hook's
// engine, in this process or in the decision daemon, with the AST cache
// of the state directory.
func hookConfig(sel selection, dopts decisionOptions, sd *statedir.Dir) (celguard.Config, *hooks.ASTCache, error) {
	key, err := sd.Key()
	if err != nil {
		return celguard.Config{}, nil, err
	}
	cfg, err := engineConfig(sel, dopts)
	if err != nil {
		return celguard.Config{}, nil, err
	}
	cfg.Store = store.NewFileDir(sd)
	cache := hooks.LoadASTCache(sd.Dir, key)
	cfg.ASTCache = cache
	if build := binaryIdentity(); build != "" {
		// The compiled set, replayed: only the programs an event's
		// decision evaluates are decoded and planned (docs/hooks.md).
		cfg.CompileOptions = append(cfg.CompileOptions, compile.WithSetCache(hooks.NewSetCache(sd.Dir, key, build)))
	}
	// Asks a host defers are recorded as requests a person can approve
	// later (celguard approve), named in the refusal on hosts that cannot ask.
	cfg.ApprovalRequests = true
	return cfg, cache, nil
}

// binaryIdentity identifies this celguard binary for the compiled-set
// cache (hooks.BinaryIdentity: its Go build ID, else its path, size and
// modification time), so that a set compiled by another build is never
// replayed; "" when it cannot be found (then no set is cached).
func binaryIdentity() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return hooks.BinaryIdentity(exe)
}

// hookLoadError is the error the hook answers with when its engine cannot
// be made.
func hookLoadError(err error) error {
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		return fmt.Errorf("the policies do not compile: %v", ds.Errors())
	}
	return err
}

// hookWarnings are what the hook says on stderr about guard's layers.
func hookWarnings(guard *celguard.Guard, dopts decisionOptions) []string {
	set := guard.Engine().PolicySet()
	return append(layerWarnings(guard.Discovery(), set), dopts.warnings(set)...)
}

// hookInstallParams is what `celguard hook install HOST` was asked to do.
type hookInstallParams struct {
	user, project, managed bool
	dryRun                 bool
	command                string
	hookOptions
	stdio
}

func newHookInstallCmd(sio stdio) *cobra.Command {
	var p hookInstallParams
	cmd := &cobra.Command{
		Use:   "install HOST [--project|--user|--managed] [--dry-run]",
		Short: "Add celguard's hooks to a host's settings file",
		Long: `Install merges celguard's hook configuration into HOST's settings file:

  claude-code  .claude/settings.json  (--user: ~/.claude/settings.json)
  codex        ~/.codex/hooks.json    (--project: .codex/hooks.json)
  gemini       .gemini/settings.json  (--user: ~/.gemini/settings.json)
  cursor       .cursor/hooks.json     (--user: ~/.cursor/hooks.json)
  copilot      ~/.copilot/hooks/celguard.json ($COPILOT_HOME/hooks;
               --project: .github/hooks/celguard.json)
  opencode     .opencode/plugins/celguard.js (--user:
               ~/.config/opencode/plugins/celguard.js): celguard's plugin,
               which runs the hook command for each event

The project files are under the current directory. Codex and Copilot CLI
install for the user by default: they run a project's hooks only in a
project the user trusted, and skip them without a word elsewhere; --project
refuses in a project Codex does not trust.

--managed writes the host's managed (administrator) settings, which the
host applies above the user's and the project's and which neither the user
nor the agent can change; it needs an administrator (sudo):

  claude-code  /etc/claude-code/managed-settings.json
               (macOS: /Library/Application Support/ClaudeCode/,
               Windows: C:\Program Files\ClaudeCode\)
  gemini       /etc/gemini-cli/settings.json ($GEMINI_CLI_SYSTEM_SETTINGS_PATH;
               macOS: /Library/Application Support/GeminiCli/,
               Windows: C:\ProgramData\gemini-cli\)
  copilot      /etc/github-copilot/policy.d/celguard.json (policy hooks;
               Windows: C:\ProgramData\GitHub\Copilot\policy.d\)
  codex        none celguard writes: Codex's managed hooks are TOML in
               /etc/codex/requirements.toml
  cursor       none celguard writes
  opencode     none celguard writes (whether OpenCode loads plugins from
               /etc/opencode is not verified)

Everything already in the
file stays: other settings, other hooks, the order of keys. A celguard hook
already there for HOST is updated in place, so installing twice changes
nothing. --dry-run prints the change as a diff and writes nothing.

--policy, --bundle, --include, --exclude, --user-dir, --project-dir,
--state-dir, --fail-open, --approve, --server, --token-file and
--server-timeout are passed on to the installed 'celguard hook HOST'
command, paths made absolute: the host runs it from wherever the agent is.
With --server URL the installed hook forwards every event to that
'celguard serve' and fails closed when it does not answer.

The command names this celguard binary by its absolute path, symbolic links
resolved, so the host runs this file and not whatever is first on PATH when
the hook runs; --command names another. The agent runs as you: if you can
write the binary or a directory above it, so can the agent, and install
warns. Install celguard where only an administrator can write (for example
/usr/local/bin) before installing the hooks.

When celguard-hook, the lean hook client, sits beside that binary (go
install ./cmd/... or the release archive installs both), the command is
'celguard-hook HOST [flags]' instead: it answers exactly as 'celguard hook
HOST' does, from the user's decision daemon when the daemon proves its
answer, and by running 'celguard hook HOST' beside it otherwise
(docs/hooks.md, "The lean client"). With --server, --decision-log or
--no-daemon the command stays 'celguard hook HOST'.`,
		Example: `  # See what would change in this project's Claude Code settings
  celguard hook install claude-code --dry-run

  # Guard every Codex session of this user with your own policies
  celguard hook install codex --user --policy ~/.config/celguard/policies

  # Forward Claude Code's hooks to the machine's celguard serve
  celguard hook install claude-code --server http://127.0.0.1:9743`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: hooks.Hosts(),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			return status(runHookInstall(args[0], p))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&p.project, "project", false, "install into the project's settings under the current directory (the default, except for Codex)")
	f.BoolVar(&p.user, "user", false, "install into the user's settings under the home directory (Codex's default)")
	f.BoolVar(&p.managed, "managed", false, "install into the host's managed (administrator) settings, which the user and the agent cannot change")
	f.BoolVar(&p.dryRun, "dry-run", false, "print the change as a diff; write nothing")
	f.StringVar(&p.command, "command", "", "the celguard binary the host runs (default: this binary's absolute path)")
	p.addFlags(f)
	cmd.MarkFlagsMutuallyExclusive("project", "user", "managed")
	return cmd
}

func runHookInstall(host string, p hookInstallParams) int {
	t, err := p.target(host)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard hook install: %v\n", err)
		return exitUsage
	}
	updated, changed, err := setup.Install(host, t.old, installCommand(host, p))
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard hook install: %s: %v\n", t.path, err)
		return exitUsage
	}
	shown := t.path
	if rel, err := filepath.Rel(t.cwd, t.path); err == nil && !strings.HasPrefix(rel, "..") {
		shown = rel
	}
	if !changed {
		fmt.Fprintf(p.stdout, "%s: celguard's %s hooks are already installed\n", shown, host)
		return installNotes(host, t.path, t.old, updated, t.scope, t.cwd, t.home, p.stdio)
	}
	if p.dryRun {
		fmt.Fprint(p.stdout, setup.Diff(shown, shown+" (with celguard)", t.old, updated))
		return exitOK
	}
	if err := writeSettings(t.path, updated); err != nil {
		if t.scope == setup.ScopeManaged && errors.Is(err, os.ErrPermission) {
			err = fmt.Errorf("%w (managed settings are the administrator's: run it with sudo)", err)
		}
		fmt.Fprintf(p.stderr, "celguard hook install: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(p.stdout, "%s: installed celguard's %s hooks in the %s scope (%s)\n", shown, host, t.scope, strings.Join(setup.HookEvents(host), ", "))
	return installNotes(host, t.path, t.old, updated, t.scope, t.cwd, t.home, p.stdio)
}

// installTarget is the settings file hook install changes, and where it
// runs from.
type installTarget struct {
	path, cwd, home string
	scope           setup.InstallScope
	old             []byte // the file's content, nil when there is none
}

// target checks host and the flags, finds the settings file and the
// binary to install (warning on stderr about one the agent could
// replace), and makes p's paths absolute.
func (p *hookInstallParams) target(host string) (installTarget, error) {
	var t installTarget
	info, err := hooks.LookupHost(host)
	if err != nil {
		return t, err
	}
	t.scope = setup.ScopeProject
	switch {
	case p.user, info.UserDefault && !p.project && !p.managed:
		// Codex and Copilot CLI run the user's hooks in every project, a
		// project's only where the user trusted the project.
		t.scope = setup.ScopeUser
	case p.managed:
		t.scope = setup.ScopeManaged
	}
	if t.cwd, err = os.Getwd(); err != nil {
		return t, err
	}
	if host == hooks.Codex && t.scope == setup.ScopeProject {
		if err := codexProjectTrusted(t.cwd); err != nil {
			return t, err
		}
	}
	home, herr := os.UserHomeDir()
	if t.scope == setup.ScopeUser && herr != nil {
		return t, fmt.Errorf("no home directory for --user: %v", herr)
	}
	t.home = home
	if t.path, err = setup.SettingsPath(host, t.scope, t.cwd, t.home); err != nil {
		return t, err
	}
	if t.old, err = os.ReadFile(t.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return t, describe(err)
	}
	if p.command == "" {
		if p.command, err = setup.Executable(); err != nil {
			return t, fmt.Errorf("%v; name it with --command /absolute/path/to/celguard", err)
		}
	}
	for _, w := range setup.BinaryWarnings(p.command) {
		fmt.Fprintf(p.stderr, "celguard hook install: warning: %s\n", w)
	}
	if lean, ok := p.lean(); ok {
		for _, w := range setup.BinaryWarnings(lean) {
			fmt.Fprintf(p.stderr, "celguard hook install: warning: %s\n", w)
		}
	}
	return t, p.hookOptions.absolute()
}

// lean is the lean client to install, when there is one beside the
// binary and the hook asks the daemon: not with --server (the forwarding
// hook), --decision-log or --no-daemon, which the lean client would always
// hand to celguard hook.
func (p hookInstallParams) lean() (string, bool) {
	if p.forward.server != "" || p.decisions.logPath != "" || p.noDaemon {
		return "", false
	}
	return setup.LeanBeside(p.command)
}

// codexProjectTrusted refuses a project install where Codex would not run
// it: in a project its config.toml does not trust.
func codexProjectTrusted(cwd string) error {
	home, err := os.UserHomeDir()
	config := filepath.Join(home, ".codex", "config.toml")
	if ch := os.Getenv("CODEX_HOME"); ch != "" {
		config, err = filepath.Join(ch, "config.toml"), nil
	}
	if err != nil {
		return fmt.Errorf("no home directory to find Codex's config.toml: %v", err)
	}
	data, err := os.ReadFile(config)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return describe(err)
	}
	if setup.CodexProjectTrusted(data, cwd) {
		return nil
	}
	return fmt.Errorf("codex would not run a hook installed here: it loads .codex/hooks.json only in a project it trusts, "+
		"and %s is not trusted in %s, so every call would run unguarded. Install for the user instead (celguard hook install codex, "+
		"the default), or trust the project first (add to %s:\n[projects.%q]\ntrust_level = \"trusted\"\n) and install again", cwd, config, config, cwd)
}

// installNotes prints what the host needs beyond its settings file: Codex
// runs a hook only once it is trusted (and skips an untrusted one without a
// word), so the exact trust entries are printed.
func installNotes(host, path string, old, settings []byte, scope setup.InstallScope, cwd, home string, sio stdio) int {
	if host == hooks.Copilot && scope == setup.ScopeProject {
		fmt.Fprintln(sio.stdout, "Copilot CLI loads a repository's .github/hooks only in a folder you trusted; in any other it runs every call unguarded. 'celguard hook install copilot' (the user's hooks) guards every folder.")
	}
	if host != "codex" {
		return exitOK
	}
	entries, err := setup.CodexTrustEntries(path, settings)
	if err != nil {
		fmt.Fprintf(sio.stderr, "celguard hook install: %v\n", err)
		return exitUsage
	}
	if len(old) > 0 {
		before, _ := setup.CodexTrustEntries(path, old)
		was := map[string]string{}
		for _, e := range before {
			was[e.Key] = e.Hash
		}
		for _, e := range entries {
			if h, ok := was[e.Key]; ok && h != e.Hash {
				fmt.Fprintln(sio.stdout, "The hook command line changed: Codex no longer trusts celguard's hooks, and skips them until the entries below replace the old ones.")
				break
			}
		}
	}
	config := filepath.Join(home, ".codex", "config.toml")
	if ch := os.Getenv("CODEX_HOME"); ch != "" {
		config = filepath.Join(ch, "config.toml")
	}
	fmt.Fprintf(sio.stdout, "Codex skips hooks it has not trusted, silently. Trust these with /hooks in an interactive codex session, or add these lines to %s (they change whenever the command line does; 'celguard doctor' checks them):\n\n", config)
	for _, e := range entries {
		fmt.Fprintln(sio.stdout, e.TOML())
	}
	if scope == setup.ScopeProject {
		fmt.Fprintf(sio.stdout, "Codex loads a project's .codex/hooks.json only in a project it trusts:\n\n[projects.%q]\ntrust_level = \"trusted\"\n\n", cwd)
	}
	return exitOK
}

// installCommand is the hook command line the host runs: the lean client
// (celguard-hook HOST, cmd/celguard-hook) when it sits beside the binary
// and the hook may ask the decision daemon, else celguard hook HOST.
func installCommand(host string, p hookInstallParams) string {
	parts := []string{shell.Quote(p.command), "hook", host}
	if lean, ok := p.lean(); ok {
		parts = []string{shell.Quote(lean), host}
	}
	for _, a := range p.args() {
		parts = append(parts, shell.Quote(a))
	}
	return strings.Join(parts, " ")
}

// writeSettings replaces a settings file atomically, keeping its mode.
func writeSettings(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return describe(err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, data, mode); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
