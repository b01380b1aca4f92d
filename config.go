package celguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/celguard/celguard/bundle"
	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/judge"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/stdlib"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/telemetry"
	"github.com/celguard/celguard/trust"
)

// Config is everything that makes an engine: which policies decide
// (Policies) and how the engine is deployed (the other fields). Its Load is
// the one constructor of every engine celguard runs: `celguard eval`,
// `celguard hook`, `celguard serve` (through serve.Config.Engine) and a Go
// embedder all fill a Config and call Load, so a setting added here reaches
// all four at once. A coming deployment option (telemetry, signed bundles,
// a daemon, an MCP proxy) is one more field here and one more step in Load,
// not a fifth composition.
//
// The zero Config reads every layer, as `celguard eval` does, with the
// user's and the administrator's judges, no decision log, in enforcing
// mode, state in each session's memory, and an ask verdict a block with
// code approval_required (no Approver).
type Config struct {
	// Policies chooses the policy sources (policies.Select): the built-in
	// bundle, the user's and the project's layers, explicit files,
	// registered sources.
	Policies policies.Options
	// Sources, when set, replaces Policies: the program reads its policy
	// sources itself (from a database, from memory), and every Reload
	// calls it again. The sources are compiled as given, so they must
	// include policies.ToolClasses() when a rule reads tool classes.
	Sources func() ([]policy.Source, error)

	// HostFS makes path.abs resolve symbolic links on this machine's file
	// system (stdlib.WithSymlinks), so a link in the workspace that points
	// at ~/.ssh is judged by where it points. The commands that decide the
	// calls of an agent on this machine set it (eval, hook, serve).
	HostFS bool

	// JudgeFiles are the judges files read (judge.Load: a later file's
	// judge replaces an earlier's of the same name). nil reads the default
	// ones, DefaultJudgeFiles(Policies.UserDir); an empty, non-nil slice
	// reads none.
	JudgeFiles []string

	// DecisionLog, when set, appends every decision to a file, one JSON
	// line each, arguments masked (docs/decision-log.md). DecisionSink,
	// when set, receives every decision too. A decision a sink cannot
	// record is refused (decision_log_failed): an audit trail with holes
	// is not one.
	DecisionLog  *DecisionLog
	DecisionSink eval.DecisionSink

	// Telemetry, when set, sends every decision to OpenTelemetry over
	// OTLP: a span, the decision record as a log (masked as the decision
	// log masks it) and metrics (package telemetry, docs/telemetry.md).
	// It never changes a decision: a collector that is down, slow or
	// refusing loses telemetry, not calls. Guard.Close flushes it within
	// its FlushTimeout. Off (nil) by default; telemetry.FromEnv reads the
	// OTEL_* environment.
	Telemetry *telemetry.Config

	// Monitor decides in monitor mode (eval.WithMonitor): rules are
	// reported, only mandatory rules and the default verdict decide.
	Monitor bool

	// Store, when set, keeps every session's state (counters, halts,
	// approvals) in a state store that processes and replicas share
	// (eval.WithStore; store.Open makes one from a URL). Without it each
	// session keeps its state in memory.
	Store state.Store

	// Approver settles ask verdicts; nil makes an ask a block with code
	// approval_required. DeferAsks leaves every ask to the caller, as the
	// command line and the server do.
	Approver eval.Approver
	// ApprovalRequests records every ask deferred to the caller as a
	// request a person can approve later (eval.WithApprovalRequests).
	ApprovalRequests bool
	// DecisionMetadata gives every decision its audit record: id, time,
	// policy digest, session (eval.WithDecisionMetadata).
	DecisionMetadata bool

	// BundleFiles are the bundles files read (bundle.LoadConfig): signed
	// policy bundles, pulled from a registry or a URL, whose policies join
	// the user's or the administrator's layer (docs/bundles.md). nil reads
	// the default ones, bundle.DefaultFiles (the user's bundles.json and
	// /etc/celguard/bundles.json, which must be root-owned); an empty,
	// non-nil slice reads none. Bundles are more, given directly (Layer
	// empty is the user's). Bundles
	// join only when the layers are read (not beside Sources, nor with
	// explicit policy files alone). Each adds the bundle in force in its
	// store; a mandatory one without a good bundle, or one configured
	// on_refused: block after a refusal, adds a policy that blocks every
	// call instead (Guard.Bundles reports which).
	BundleFiles []string
	Bundles     []bundle.LayerConfig

	// ProtectedFiles are files that hold the deployment's own secrets,
	// such as the token files of `celguard serve` (--token-file,
	// --operator-token-file): the mandatory self-protection policy blocks
	// every tool call that writes or reads one (policies.ProtectFiles),
	// for whichever entry point loads the engine. Each is absolute or
	// under ~/. Sources that do not include the built-in self-protection
	// policy are not changed.
	ProtectedFiles []string

	// PerProject decides each call with the project layer of the call's
	// work directory rather than the one of Policies.WorkDir: one engine
	// serving many repositories (`celguard serve`, the hook's daemon)
	// decides every call with exactly the layers `celguard hook` run in
	// that directory reads (Guard.ForWorkDir). It applies when the layers
	// are read and Policies.ProjectDir is empty. Every project's engine
	// shares the state store (an in-memory one when Store is nil), so a
	// session is one whichever project its calls come from. MaxProjects
	// bounds the projects kept compiled (DefaultMaxProjects when zero).
	PerProject  bool
	MaxProjects int
	// Manifests records, each time the sources are read, what they were
	// read from (Guard.SourcesManifest): the decision daemon sends it with
	// every answer so that the lean hook client, which reads no policy,
	// can check that the daemon decided with what it would read now.
	Manifests bool

	// ASTCache caches checked expressions across processes
	// (compile.WithASTCache); the hook keeps one in its state directory.
	ASTCache compile.ASTCache

	// CompileOptions and EngineOptions are passed to compile.Compile and
	// eval.New after the ones the fields above make.
	CompileOptions []compile.Option
	EngineOptions  []eval.Option
}

// DecisionLog is a decision log file and its options.
type DecisionLog struct {
	Path    string
	Options decisionlog.FileSinkOptions
}

// DeferAsks is the approver that leaves every ask verdict to whoever reads
// the decision: the caller of `celguard eval`, the host of a hook (which
// asks its user), the client of a server.
var DeferAsks eval.Approver = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Defer}, nil
})

// DefaultJudgeFiles are the judges files the command line reads: the
// user's (judges.json in userDir, or in the user's configuration directory
// when userDir is empty; none when it is "-") and the administrator's
// (/etc/celguard/judges.json), whose judges win.
func DefaultJudgeFiles(userDir string) []string {
	var paths []string
	switch userDir {
	case "-":
	case "":
		if d, err := trust.ConfigDir(); err == nil {
			paths = append(paths, filepath.Join(d, judge.FileName))
		}
	default:
		paths = append(paths, filepath.Join(userDir, judge.FileName))
	}
	return append(paths, judge.AdminFile)
}

// Load reads the policies c chooses, compiles them and builds the engine
// with c's deployment settings. A policy that does not compile is an error
// that is a policy.Diagnostics (errors.As), every problem with its
// file:line:col; a path that cannot be read, a judges file or decision log
// that cannot be used, or ctx ending, is an error too. Load never returns
// a Guard that would decide with less than was asked for.
func (c Config) Load(ctx context.Context) (*Guard, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	copts, err := c.compileOptions()
	if err != nil {
		return nil, err
	}
	d, man, err := c.selectManifest()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := compile.Compile(d.Sources, copts...)
	if err != nil {
		return nil, err
	}
	var closers []io.Closer
	if c.perProject() && c.Store == nil {
		// The projects' engines share one store, so that a session's
		// state does not depend on which project decides its call.
		c.Store = store.NewMemory(store.DefaultTTL)
		closers = append(closers, c.Store)
	}
	eopts, sink, ecl, err := c.engineOptions()
	closers = append(closers, ecl...)
	if err != nil {
		closeAll(closers)
		return nil, err
	}
	eng, err := eval.New(set, eopts...)
	if err != nil {
		closeAll(closers)
		return nil, fmt.Errorf("celguard: %w", err)
	}
	g := &Guard{cfg: c, compile: copts, eopts: eopts, engine: eng, closers: closers, sink: sink,
		discovery: d, digest: set.Digest(), tried: set.Digest(), manifest: man}
	if c.perProject() {
		g.projects = newProjects(c)
	}
	for _, cl := range closers {
		if tel, ok := cl.(*telemetry.Telemetry); ok {
			g.tel = tel
		}
	}
	return g, nil
}

// Select reads the policy sources c chooses (Sources, or
// policies.Select, and the bundles in force), without compiling them. Its
// errors are the reader's, unwrapped (an *fs.PathError for a path that
// cannot be read).
func (c Config) Select() (*policies.Discovery, error) {
	if c.Sources != nil {
		srcs, err := c.Sources()
		if err != nil {
			return nil, err
		}
		if srcs, err = policies.ProtectFiles(srcs, c.ProtectedFiles); err != nil {
			return nil, fmt.Errorf("celguard: %w", err)
		}
		return &policies.Discovery{Sources: srcs}, nil
	}
	d, err := policies.Select(c.Policies)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	if err != nil {
		return nil, err
	}
	bcs, err := c.BundleConfigs()
	if err != nil {
		return nil, err
	}
	for _, bc := range bcs {
		dec, _ := bc.Decide(context.Background()) // not in force: reported by Guard.Bundles
		d.Sources = append(d.Sources, dec.Sources...)
	}
	if d.Sources, err = policies.ProtectFiles(d.Sources, c.ProtectedFiles); err != nil {
		return nil, fmt.Errorf("celguard: %w", err)
	}
	return d, nil
}

// selectManifest is Select and, with Manifests, the manifest of what it
// read: a snapshot of the paths it consults taken before and after it
// reads them, kept only when both agree (nothing changed while it read).
// With bundles configured the paths include each bundle's key files and
// store file (bundle.LayerConfig.Paths: the bundle in force is verified
// from them and nothing else), the bundles files being there already;
// the bundles are read again after the second snapshot, and a
// configuration that names other files by then leaves no manifest.
// Without a manifest a client that reads no policy decides another way.
func (c Config) selectManifest() (*policies.Discovery, *daemonwire.Manifest, error) {
	if !c.Manifests {
		d, err := c.Select()
		return d, nil, err
	}
	roots, rerr := c.watchRoots()
	var bundleRoots []daemonwire.Root
	if rerr == nil {
		bundleRoots, rerr = c.bundleRoots()
	}
	roots = append(roots, bundleRoots...)
	var before *daemonwire.Manifest
	if rerr == nil {
		before, rerr = daemonwire.Snapshot(roots)
	}
	d, err := c.Select()
	if err != nil || rerr != nil {
		return d, nil, err
	}
	after, err := daemonwire.Snapshot(roots)
	if err != nil || !after.Equal(before) {
		return d, nil, nil
	}
	if again, err := c.bundleRoots(); err != nil || !slices.Equal(again, bundleRoots) {
		return d, nil, nil
	}
	return d, after, nil
}

// bundleRoots are the files the bundles configured read from, besides
// the bundles files (bundle.LayerConfig.Paths), each with its content.
func (c Config) bundleRoots() ([]daemonwire.Root, error) {
	bcs, err := c.BundleConfigs()
	if err != nil {
		return nil, err
	}
	var out []daemonwire.Root
	for i := range bcs {
		paths, err := bcs[i].Paths()
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			out = append(out, daemonwire.Root{Path: p, Tree: true})
		}
	}
	return out, nil
}

// watchRoots are the paths Select consults (policies.WatchRoots), with the
// bundle configuration files.
func (c Config) watchRoots() ([]daemonwire.Root, error) {
	if c.Sources != nil {
		return nil, errors.New("sources of the embedding program")
	}
	ws, err := policies.WatchRoots(c.Policies)
	if err != nil {
		return nil, err
	}
	if c.layersRead() {
		files := c.BundleFiles
		if files == nil {
			dir, _ := trust.ConfigDir()
			files = bundle.DefaultFiles(c.Policies.UserDir, dir)
		}
		for _, f := range files {
			abs, err := filepath.Abs(f)
			if err != nil {
				return nil, err
			}
			ws = append(ws, policies.Watch{Path: abs, Tree: true})
		}
	}
	out := make([]daemonwire.Root, len(ws))
	for i, w := range ws {
		out[i] = daemonwire.Root{Path: w.Path, Tree: w.Tree}
	}
	return out, nil
}

// layersRead reports whether policies.Select reads the layers for c (not
// the explicit files alone), so that bundles join them.
func (c Config) layersRead() bool {
	o := c.Policies
	return len(o.Explicit) == 0 || o.Layers || o.Bundle != "" || len(o.Include) > 0 || len(o.Exclude) > 0 ||
		o.UserDir != "" || o.ProjectDir != ""
}

// BundleConfigs are the bundles c configures (BundleFiles, then Bundles),
// none when the layers are not read.
func (c Config) BundleConfigs() ([]bundle.LayerConfig, error) {
	if c.Sources != nil || !c.layersRead() {
		return nil, nil
	}
	files := c.BundleFiles
	if files == nil {
		dir, _ := trust.ConfigDir()
		files = bundle.DefaultFiles(c.Policies.UserDir, dir)
	}
	bcs, err := bundle.LoadConfig(files...)
	if err != nil {
		return nil, fmt.Errorf("celguard: %w", err)
	}
	for _, b := range c.Bundles {
		if b.Layer == "" {
			b.Layer = "user"
		}
		if b.Layer != "user" && b.Layer != "admin" {
			return nil, fmt.Errorf("celguard: bundle %s: layer %q must be user or admin", b.Name, b.Layer)
		}
		bcs = append(bcs, b)
	}
	return bcs, nil
}

// compileOptions are the options of compile.Compile c asks for.
func (c Config) compileOptions() ([]compile.Option, error) {
	var opts []compile.Option
	if c.HostFS {
		env, err := celenv.New(celenv.WithStdlib(stdlib.WithSymlinks(true)))
		if err != nil {
			return nil, fmt.Errorf("celguard: %w", err)
		}
		opts = append(opts, compile.WithEnv(env))
	}
	if c.ASTCache != nil {
		opts = append(opts, compile.WithASTCache(c.ASTCache))
	}
	return append(opts, c.CompileOptions...), nil
}

// engineOptions are the options of eval.New c asks for, the decision sink
// they install (nil when none), and what the Guard must close (the
// decision log).
func (c Config) engineOptions() ([]eval.Option, eval.DecisionSink, []io.Closer, error) {
	var opts []eval.Option
	if c.Approver != nil {
		opts = append(opts, eval.WithApprover(c.Approver))
	}
	if c.DecisionMetadata {
		opts = append(opts, eval.WithDecisionMetadata())
	}
	if c.ApprovalRequests {
		opts = append(opts, eval.WithApprovalRequests())
	}
	if c.Store != nil {
		opts = append(opts, eval.WithStore(c.Store))
	}
	var sinks []eval.DecisionSink
	var closers []io.Closer
	if c.DecisionLog != nil {
		if c.DecisionLog.Path == "" {
			return nil, nil, nil, errors.New("celguard: a decision log needs a path")
		}
		sink, err := decisionlog.NewFileSink(c.DecisionLog.Path, c.DecisionLog.Options)
		if err != nil {
			return nil, nil, nil, err
		}
		sinks = append(sinks, sink)
		if cl, ok := any(sink).(io.Closer); ok {
			closers = append(closers, cl)
		}
	}
	if c.DecisionSink != nil {
		sinks = append(sinks, c.DecisionSink)
	}
	if c.Telemetry != nil {
		// Last: it never fails, and it sees the decision every other sink
		// accepted.
		tel, err := telemetry.New(context.Background(), *c.Telemetry)
		if err != nil {
			closeAll(closers)
			return nil, nil, nil, err
		}
		sinks = append(sinks, tel)
		closers = append(closers, tel)
	}
	var sink eval.DecisionSink
	switch len(sinks) {
	case 0:
	case 1:
		sink = sinks[0]
	default:
		sink = eval.Tee(sinks)
	}
	if sink != nil {
		opts = append(opts, eval.WithDecisionSink(sink, nil))
	}
	if c.Monitor {
		opts = append(opts, eval.WithMonitor())
	}
	files := c.JudgeFiles
	if files == nil {
		files = DefaultJudgeFiles(c.Policies.UserDir)
	}
	if len(files) > 0 {
		jc, err := judge.Load(files...)
		if err == nil {
			var jopts []eval.Option
			if jopts, err = jc.Options(); err == nil {
				opts = append(opts, jopts...)
			}
		}
		if err != nil {
			closeAll(closers)
			return nil, nil, nil, err
		}
	}
	return append(opts, c.EngineOptions...), sink, closers, nil
}

// closeAll closes every closer, ignoring errors (a failed Load).
func closeAll(cs []io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// Reload reads the policy sources again and, when they changed since the
// last attempt (by digest) or force is set, compiles them with the same
// options and puts the new set in force (eval.Engine.Swap): sessions keep
// their counters. A set that does not compile is not used; the last good
// one stays in force and the error is returned. changed says whether a new
// set is in force. Reloads are serialised.
func (g *Guard) Reload(force bool) (changed bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d, man, err := g.cfg.selectManifest()
	if err != nil {
		g.manifest = nil
		return false, err
	}
	digest := g.sourcesDigest(d.Sources)
	if digest == g.tried && !force {
		// The same sources: the manifest is of the set in force only when
		// that set was compiled from them (the last attempt succeeded).
		g.manifest = nil
		if digest == g.digest {
			g.manifest = man
		}
		return false, nil
	}
	g.tried = digest
	g.manifest = nil // the set in force no longer matches what is on disk
	set, err := compile.Compile(d.Sources, g.compile...)
	if err != nil {
		return false, err
	}
	if err := g.engine.Swap(set); err != nil {
		return false, err
	}
	g.discovery, g.digest, g.manifest = d, set.Digest(), man
	return true, nil
}

// sourcesDigest is compile.Digest(srcs), not computed again for the
// sources it was last computed for: a long-lived Guard (serve, the
// decision daemon) checks its sources every few seconds, and hashing them
// all (the built-in policies alone are some 300 KB) was most of a check,
// which a call pays when calls are more than the check's interval apart.
// The caller holds g.mu.
func (g *Guard) sourcesDigest(srcs []policy.Source) string {
	if g.digestedAs != "" && slices.EqualFunc(srcs, g.digested, sameSource) {
		return g.digestedAs
	}
	digest := compile.Digest(srcs)
	// A copy of the bytes too: what is compared next is what was hashed.
	g.digested = slices.Clone(srcs)
	for i := range g.digested {
		g.digested[i].Data = bytes.Clone(g.digested[i].Data)
	}
	g.digestedAs = digest
	return digest
}

// sameSource says whether a and b are the same source in every field, not
// only in those compile.Digest hashes today: a field Digest comes to hash
// is then never taken as unchanged (TestSameSourceComparesEveryField).
func sameSource(a, b policy.Source) bool {
	return a.Name == b.Name && a.Layer == b.Layer && a.Untrusted == b.Untrusted && a.Bundle == b.Bundle && bytes.Equal(a.Data, b.Data)
}

// Telemetry is the Guard's OpenTelemetry export (Config.Telemetry), nil
// when telemetry is off (its methods do nothing on nil).
func (g *Guard) Telemetry() *telemetry.Telemetry { return g.tel }

// TelemetryStats is what the Guard's telemetry export (Config.Telemetry)
// has queued, exported and dropped so far; false when telemetry is off.
func (g *Guard) TelemetryStats() (telemetry.Stats, bool) {
	if g.tel == nil {
		return telemetry.Stats{}, false
	}
	return g.tel.Stats(), true
}

// Close releases what Load opened (the decision log file). The Guard's
// sessions must not decide after it.
func (g *Guard) Close() error {
	var errs []error
	for _, c := range g.closers {
		errs = append(errs, c.Close())
	}
	g.closers = nil
	return errors.Join(errs...)
}
