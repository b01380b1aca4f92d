// Package celguard is the one-call way to embed celguard in a Go agent: Load
// builds the policy set exactly as the celguard command line does (the
// built-in bundle and tool classes, the user's and the project's layers, or
// the policy files named, through policies.Select), compiles it and returns
// a Guard, whose sessions decide tool calls:
//
//	guard, err := celguard.Load(ctx, celguard.WithPolicies("team/"))
//	if err != nil {
//		return err // a policy.Diagnostics when a policy does not compile
//	}
//	session := guard.NewSession("session-1", nil)
//	d, _ := session.Before(ctx, eval.Call{Tool: "Bash", Args: args})
//
// Why a package of its own, at the module root: the packages below it each
// do one step (policies finds the sources, compile compiles them, eval
// decides), and an embedder who strings them together by hand can miss one,
// as compile.CompilePaths on a user's files alone misses the tool classes
// (compile now reports that as no_tool_classes rather than allowing
// silently). This package is the composition, above eval and hooks and
// below cmd/celguard in internal/layering's table; it adds no behaviour of
// its own, so the lower packages stay the reference and the command line
// and an embedder decide alike (a test in cmd/celguard compares them).
// docs/embedding.md walks through an agent loop with it.
package celguard

import (
	"context"
	"fmt"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// Option configures Load.
type Option func(*config)

type config struct {
	sel         policies.Options
	compileOpts []compile.Option
	evalOpts    []eval.Option
}

// WithPolicies names policy files and directories, as the command line's
// --policy does. Alone, only they decide, with the built-in tool classes
// (rules may match tool classes and read command, paths and classes);
// with WithLayers, WithBundle, WithInclude, WithExclude, WithUserDir or
// WithProjectDir they are the explicit layer on top of the others.
func WithPolicies(paths ...string) Option {
	return func(c *config) { c.sel.Explicit = append(c.sel.Explicit, paths...) }
}

// WithLayers reads every layer (the built-in bundle, the user's and the
// project's directories) even beside WithPolicies, as the command line's
// --effective does. Without WithPolicies the layers are read anyway.
func WithLayers() Option { return func(c *config) { c.sel.Layers = true } }

// WithBundle selects the built-in bundle: recommended (the default),
// minimal, all or none (--bundle).
func WithBundle(name string) Option { return func(c *config) { c.sel.Bundle = name } }

// WithInclude adds built-in policies to the bundle (--include).
func WithInclude(names ...string) Option {
	return func(c *config) { c.sel.Include = append(c.sel.Include, names...) }
}

// WithExclude leaves built-in policies out of the bundle (--exclude).
func WithExclude(names ...string) Option {
	return func(c *config) { c.sel.Exclude = append(c.sel.Exclude, names...) }
}

// WithUserDir replaces the user's policy directory ($XDG_CONFIG_HOME/celguard);
// "-" means none (--user-dir).
func WithUserDir(dir string) Option { return func(c *config) { c.sel.UserDir = dir } }

// WithProjectDir replaces the project's policy directory (.celguard/ at the
// repository root); "-" means none (--project-dir).
func WithProjectDir(dir string) Option { return func(c *config) { c.sel.ProjectDir = dir } }

// WithWorkDir is where the project is looked for (default: the current
// directory).
func WithWorkDir(dir string) Option { return func(c *config) { c.sel.WorkDir = dir } }

// WithSources adds policies the program holds itself (the registered layer,
// above every layer but the admin one).
func WithSources(srcs ...policy.Source) Option {
	return func(c *config) { c.sel.Registered = append(c.sel.Registered, srcs...) }
}

// WithApprover settles ask verdicts (eval.WithApprover). Without one, an
// ask is a block with code approval_required; the command line defers
// every ask to its caller (an approver answering eval.Defer).
func WithApprover(a eval.Approver) Option {
	return func(c *config) { c.evalOpts = append(c.evalOpts, eval.WithApprover(a)) }
}

// WithCompileOptions passes options to compile.Compile.
func WithCompileOptions(opts ...compile.Option) Option {
	return func(c *config) { c.compileOpts = append(c.compileOpts, opts...) }
}

// WithEngineOptions passes options to eval.New.
func WithEngineOptions(opts ...eval.Option) Option {
	return func(c *config) { c.evalOpts = append(c.evalOpts, opts...) }
}

// Guard is a compiled policy set and its engine. It is safe for concurrent
// use; each agent session has its own eval.Session (NewSession).
type Guard struct {
	engine    *eval.Engine
	discovery *policies.Discovery
	digest    string
}

// Load reads the policies the options choose (with none: every layer, as
// `celguard eval` reads them: the recommended built-in bundle, the user's
// and the project's policies), compiles them and builds the engine. A
// policy that does not compile is an error that is a policy.Diagnostics
// (errors.As), every problem with its file:line:col; a path that cannot be
// read, or ctx ending, is an error too. Load never returns a Guard that
// would decide with less than was asked for.
func Load(ctx context.Context, opts ...Option) (*Guard, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := policies.Select(c.sel)
	if err != nil {
		return nil, fmt.Errorf("celguard: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := compile.Compile(d.Sources, c.compileOpts...)
	if err != nil {
		return nil, err
	}
	eng, err := eval.New(set, c.evalOpts...)
	if err != nil {
		return nil, fmt.Errorf("celguard: %w", err)
	}
	return &Guard{engine: eng, discovery: d, digest: set.Digest()}, nil
}

// NewSession starts an agent session: its counters, approvals and turns.
// meta is what policies read as session (agent, user ...).
func (g *Guard) NewSession(id string, meta map[string]any) *eval.Session {
	return g.engine.NewSession(id, meta)
}

// Engine is the guard's engine (Swap, RestoreSession, PolicySet).
func (g *Guard) Engine() *eval.Engine { return g.engine }

// Discovery is what Load read: the sources, and the project layer and its
// trust when the layers were read.
func (g *Guard) Discovery() *policies.Discovery { return g.discovery }

// Digest identifies the policy set the guard decides with: its
// compile.PolicySet.Digest, the PolicyDigest of its decisions when the
// engine has eval.WithDecisionMetadata. Kept next to a Decision (whose
// RuleID, Policy, File, Line and Code name the rule that decided), it says
// which version of which rule decided.
func (g *Guard) Digest() string { return g.digest }

// Digest is compile.Digest, the digest a compiled set carries: a SHA-256
// over the sources, sorted by name: each one's name, layer, trust and content. The same
// files give the same digest.
func Digest(srcs []policy.Source) string {
	return compile.Digest(srcs)
}
