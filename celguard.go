// Package celguard is celguard's composition root: the one place where a
// policy selection and the deployment settings become an engine. Every
// engine celguard runs is built here, by Config.Load: `celguard eval`,
// `celguard hook`, `celguard serve` (serve.Config.Engine is a Config) and a
// Go program that embeds celguard. Load is the one-call form for
// embedders:
//
//	guard, err := celguard.Load(ctx, celguard.WithPolicies("team/"))
//	if err != nil {
//		return err // a policy.Diagnostics when a policy does not compile
//	}
//	session := guard.NewSession("session-1", nil)
//	d, _ := session.Before(ctx, eval.Call{Tool: "Bash", Args: args})
//
// and a Config says the same with every setting in view:
//
//	guard, err := celguard.Config{
//		Policies:    policies.Options{Explicit: []string{"team/"}},
//		HostFS:      true,                         // path.abs follows symlinks here
//		JudgeFiles:  nil,                          // the user's and the admin's judges.json
//		DecisionLog: &celguard.DecisionLog{Path: "decisions.jsonl"},
//		Monitor:     false,
//		Store:       st,                           // store.Open("redis://..."); nil: in memory
//		Approver:    celguard.DeferAsks,           // asks go back to the caller
//	}.Load(ctx)
//
// A newcomer's map of where things happen:
//
//   - Where a verdict is decided: eval (decide.go's numbered rules), on the
//     set compile made of the sources policies found. This package adds
//     no behaviour of its own; it only composes, so the command line, the
//     server and an embedder decide alike (cmd/celguard's parity tests
//     compare them on one policy and one call stream).
//   - Where state is kept: in each eval.Session's memory, or, with
//     Config.Store, in a state store shared by processes and replicas
//     (package store: memory, redis/valkey, the hook's signed state
//     files). state.Store's commit contract is the one path to it.
//   - Who may call what: an embedder calls its own sessions; the command
//     hook is run by the agent host; `celguard serve` declares every route
//     once with its principal (public, agent or operator) in serve's route
//     table, and an agent's token gets 403 on every operator route.
//
// Why a package of its own, at the module root: the packages below it each
// do one step (policies finds the sources, compile compiles them, eval
// decides, judge reaches the judges, store keeps state), and a caller who
// strings them together by hand can miss one, as compile.CompilePaths on a
// user's files alone misses the tool classes, and as the server once did
// the judges. It sits above eval, judge and store and below serve and
// cmd/celguard in internal/layering's table. docs/embedding.md walks
// through an agent loop with it.
package celguard

import (
	"context"
	"io"
	"sync"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/telemetry"
)

// Option configures Load: each sets one field of a Config.
type Option func(*Config)

// WithPolicies names policy files and directories, as the command line's
// --policy does. Alone, only they decide, with the built-in tool classes
// (rules may match tool classes and read command, paths and classes);
// with WithLayers, WithBundle, WithInclude, WithExclude, WithUserDir or
// WithProjectDir they are the explicit layer on top of the others.
func WithPolicies(paths ...string) Option {
	return func(c *Config) { c.Policies.Explicit = append(c.Policies.Explicit, paths...) }
}

// WithLayers reads every layer (the built-in bundle, the user's and the
// project's directories) even beside WithPolicies, as the command line's
// --effective does. Without WithPolicies the layers are read anyway.
func WithLayers() Option { return func(c *Config) { c.Policies.Layers = true } }

// WithBundle selects the built-in bundle: recommended (the default),
// minimal, all or none (--bundle).
func WithBundle(name string) Option { return func(c *Config) { c.Policies.Bundle = name } }

// WithInclude adds built-in policies to the bundle (--include).
func WithInclude(names ...string) Option {
	return func(c *Config) { c.Policies.Include = append(c.Policies.Include, names...) }
}

// WithExclude leaves built-in policies out of the bundle (--exclude).
func WithExclude(names ...string) Option {
	return func(c *Config) { c.Policies.Exclude = append(c.Policies.Exclude, names...) }
}

// WithUserDir replaces the user's policy directory ($XDG_CONFIG_HOME/celguard);
// "-" means none (--user-dir).
func WithUserDir(dir string) Option { return func(c *Config) { c.Policies.UserDir = dir } }

// WithProjectDir replaces the project's policy directory (.celguard/ at the
// repository root); "-" means none (--project-dir).
func WithProjectDir(dir string) Option { return func(c *Config) { c.Policies.ProjectDir = dir } }

// WithWorkDir is where the project is looked for (default: the current
// directory).
func WithWorkDir(dir string) Option { return func(c *Config) { c.Policies.WorkDir = dir } }

// WithSources adds policies the program holds itself (the registered layer,
// above every layer but the admin one).
func WithSources(srcs ...policy.Source) Option {
	return func(c *Config) { c.Policies.Registered = append(c.Policies.Registered, srcs...) }
}

// WithApprover settles ask verdicts (Config.Approver). Without one, an
// ask is a block with code approval_required; the command line defers
// every ask to its caller (DeferAsks).
func WithApprover(a eval.Approver) Option { return func(c *Config) { c.Approver = a } }

// WithJudgeFiles reads the judges of these files instead of the default
// ones (Config.JudgeFiles); with no path, no judges.
func WithJudgeFiles(paths ...string) Option {
	return func(c *Config) { c.JudgeFiles = append([]string{}, paths...) }
}

// WithDecisionLog appends every decision to a file (Config.DecisionLog).
func WithDecisionLog(path string, opts decisionlog.FileSinkOptions) Option {
	return func(c *Config) { c.DecisionLog = &DecisionLog{Path: path, Options: opts} }
}

// WithDecisionSink writes every decision to sink (Config.DecisionSink).
func WithDecisionSink(sink eval.DecisionSink) Option {
	return func(c *Config) { c.DecisionSink = sink }
}

// WithMonitor decides in monitor mode (Config.Monitor).
func WithMonitor() Option { return func(c *Config) { c.Monitor = true } }

// WithStore keeps sessions' state in st (Config.Store).
func WithStore(st state.Store) Option { return func(c *Config) { c.Store = st } }

// WithCompileOptions passes options to compile.Compile.
func WithCompileOptions(opts ...compile.Option) Option {
	return func(c *Config) { c.CompileOptions = append(c.CompileOptions, opts...) }
}

// WithEngineOptions passes options to eval.New.
func WithEngineOptions(opts ...eval.Option) Option {
	return func(c *Config) { c.EngineOptions = append(c.EngineOptions, opts...) }
}

// Guard is a compiled policy set and its engine. It is safe for concurrent
// use; each agent session has its own eval.Session (NewSession).
type Guard struct {
	cfg     Config
	compile []compile.Option
	eopts   []eval.Option // the engine's, shared by the projects' engines
	engine  *eval.Engine
	// projects are the guards of the projects calls came from
	// (Config.PerProject); nil without.
	projects *projects
	closers  []io.Closer
	tel      *telemetry.Telemetry // of Config.Telemetry, nil when off
	sink     eval.DecisionSink    // the decision log, DecisionSink and telemetry; nil when none

	// mu guards what Reload changes.
	mu        sync.Mutex
	discovery *policies.Discovery
	digest    string // of the set in force
	tried     string // of the sources last compiled, good or not
	// manifest is what the set in force was read from (Config.Manifests);
	// nil when there is none.
	manifest *daemonwire.Manifest
	// digested are the sources Reload last digested, and their digest
	// (sourcesDigest).
	digested   []policy.Source
	digestedAs string
}

// Load builds the Guard the options configure: Config.Load of the Config
// they fill. With no option it reads every layer, as `celguard eval` reads
// them (the recommended built-in bundle, the user's and the project's
// policies), with the user's and the administrator's judges.
func Load(ctx context.Context, opts ...Option) (*Guard, error) {
	var c Config
	for _, o := range opts {
		o(&c)
	}
	return c.Load(ctx)
}

// NewSession starts an agent session: its counters, approvals and turns.
// meta is what policies read as session (agent, user ...).
func (g *Guard) NewSession(id string, meta map[string]any) *eval.Session {
	return g.engine.NewSession(id, meta)
}

// RecordEvent writes ev to where the guard's decisions go (the decision
// log, Config.DecisionSink, telemetry), as the engine writes a decision:
// for a program that settles something the engine did not decide itself,
// such as a person answering an approval request in the console of
// `celguard serve`, so that the audit trail has it next to the decisions.
// Without any of them it does nothing. Its error is the sink's: the event
// was not recorded.
func (g *Guard) RecordEvent(ctx context.Context, ev *eval.DecisionEvent) error {
	if g.sink == nil {
		return nil
	}
	return g.sink.WriteDecision(ctx, ev)
}

// Engine is the guard's engine (Swap, RestoreSession, PolicySet).
func (g *Guard) Engine() *eval.Engine { return g.engine }

// Discovery is what Load (or the last Reload that put a set in force)
// read: the sources, and the project layer and its trust when the layers
// were read.
func (g *Guard) Discovery() *policies.Discovery {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.discovery
}

// Digest identifies the policy set the guard decides with: its
// compile.PolicySet.Digest, the PolicyDigest of its decisions when the
// engine has eval.WithDecisionMetadata. Kept next to a Decision (whose
// RuleID, Policy, File, Line and Code name the rule that decided), it says
// which version of which rule decided.
func (g *Guard) Digest() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.digest
}

// SourcesManifest is what the set in force was read from, and that set's
// digest, read together (Config.Manifests): nil when there is none (not
// asked for, the files or the bundle configuration changed while they
// were read, the last read failed). A manifest is never changed once made: a caller
// that gets the same pointer before and after a decision knows that no
// Reload put another set in force in between.
func (g *Guard) SourcesManifest() (*daemonwire.Manifest, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.manifest, g.digest
}

// Digest is compile.Digest, the digest a compiled set carries: a SHA-256
// over the sources, sorted by name: each one's name, layer, trust and content. The same
// files give the same digest.
func Digest(srcs []policy.Source) string {
	return compile.Digest(srcs)
}
