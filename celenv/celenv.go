// Package celenv defines the one CEL environment every celguard policy is
// compiled in: the variables a rule sees, the libraries it may call and the
// limits every evaluation runs under.
//
// The built-in variables a rule sees are one table, with their names, CEL
// types and meanings: Variables (variables.go).
//
// Policies add their own named variables on top (see compile). Libraries:
// cel-go's optional types and the ext libraries strings, lists, sets, regex,
// math, encoders and bindings, and celguard's stdlib.
package celenv

import (
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"

	"github.com/celguard/celguard/stdlib"
)

// DefaultCostLimit is the runtime cost budget of one expression evaluation,
// in cel-go cost units (roughly one unit per operation or per element
// scanned). A condition that exceeds it is a runtime error, which the rule's
// failure policy turns into a block (closed) or a non-match (open).
const DefaultCostLimit uint64 = 1_000_000

// DefaultInterruptCheckFrequency is how many comprehension iterations run
// between two checks of the context's cancellation.
const DefaultInterruptCheckFrequency = 100

// Option configures an Env. Options validate their arguments.
type Option func(*config) error

type config struct {
	costLimit  uint64
	stdlibOpts []stdlib.Option
	libraries  []cel.EnvOption
}

// WithCostLimit sets the runtime cost budget of one evaluation.
func WithCostLimit(n uint64) Option {
	return func(c *config) error {
		if n == 0 {
			return fmt.Errorf("celenv.WithCostLimit: the limit must be positive")
		}
		c.costLimit = n
		return nil
	}
}

// WithStdlib passes options (home directory, symlink resolution) to the stdlib.
func WithStdlib(opts ...stdlib.Option) Option {
	return func(c *config) error {
		c.stdlibOpts = append(c.stdlibOpts, opts...)
		return nil
	}
}

// WithLibrary adds a CEL library (a cel.Lib or any EnvOption) to the
// environment: the hook for functions an embedding program provides.
func WithLibrary(lib cel.EnvOption) Option {
	return func(c *config) error {
		if lib == nil {
			return fmt.Errorf("celenv.WithLibrary: nil library")
		}
		c.libraries = append(c.libraries, lib)
		return nil
	}
}

// Env is the compiled-in environment with its limits. It is immutable and safe
// for concurrent use.
type Env struct {
	cel       *cel.Env
	lib       *stdlib.Lib
	costLimit uint64
	identity  string
}

// New builds the environment.
func New(opts ...Option) (*Env, error) {
	cfg := config{costLimit: DefaultCostLimit}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	// ProgramOptions price the stdlib's calls through its
	// ActualCostEstimator, so its libraries need no per-program trackers.
	lib, err := stdlib.New(append(cfg.stdlibOpts, stdlib.WithEstimatorPrices())...)
	if err != nil {
		return nil, fmt.Errorf("celenv: %w", err)
	}
	envOpts := append(declarations(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
		ext.Regex(),
		ext.Math(),
		ext.Encoders(),
		ext.Bindings(),
		cel.ASTValidators(
			cel.ValidateRegexLiterals(),
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateComprehensionNestingLimit(4),
		),
	)
	envOpts = append(envOpts, lib.EnvOptions()...)
	envOpts = append(envOpts, cfg.libraries...)
	env, err := cel.NewEnv(envOpts...)
	if err != nil {
		return nil, fmt.Errorf("celenv: %w", err)
	}
	e := &Env{cel: env, lib: lib, costLimit: cfg.costLimit}
	if len(cfg.libraries) == 0 {
		e.identity = fmt.Sprintf("celenv stdlib=%d home=%q symlinks=%t cost=%d", lib.Version(), lib.Home(), lib.Symlinks(), cfg.costLimit)
	}
	return e, nil
}

// Identity names what the environment was built from when it is one of
// celguard's own (only the options of this package: stdlib version, home
// directory, symlink resolution, cost limit), so that two environments with
// one identity declare the same functions with the same costs and fold
// the same constants; "" for an environment with a library of the
// embedder's (WithLibrary), which has no identity to key a cache on.
func (e *Env) Identity() string { return e.identity }

// Default is the environment with default options, built once on first use.
var Default = sync.OnceValues(func() (*Env, error) { return New() })

// CEL returns the underlying cel-go environment. Make its programs with
// ProgramOptions (or ProgramOptionsFor): the stdlib's runtime prices come
// from the cost estimator those options install (stdlib.WithEstimatorPrices).
func (e *Env) CEL() *cel.Env { return e.cel }

// Stdlib returns the stdlib instance the environment was built with.
func (e *Env) Stdlib() *stdlib.Lib { return e.lib }

// CostLimit returns the runtime cost budget of one evaluation.
func (e *Env) CostLimit() uint64 { return e.costLimit }

// ProgramOptions are applied to every compiled expression: the cost limit
// with stdlib-aware cost tracking, interruption on context cancellation,
// constant folding, and constant regular expressions compiled once with a
// literal prefilter.
func (e *Env) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize),
		cel.OptimizeRegex(prefilteredMatches...),
		cel.CostTracking(e.lib.ActualCostEstimator()),
		cel.CostLimit(e.costLimit),
		cel.InterruptCheckFrequency(DefaultInterruptCheckFrequency),
	}
}
