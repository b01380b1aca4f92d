package stdlib

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
)

// LatestVersion is the newest stdlib version. A Lib built with WithVersion(n)
// declares only the functions introduced in version n or earlier, so stored
// policies keep compiling with the same function set after an upgrade.
const LatestVersion uint32 = 4

// Config is the configuration a Lib is built from. It is filled in by New from
// its Options; the zero value is never used directly.
type Config struct {
	home     string
	symlinks bool
	version  uint32
	// estimatorPrices: see WithEstimatorPrices.
	estimatorPrices bool
}

// Option configures a Lib. Options validate their arguments and New reports
// the first error.
type Option func(*Config) error

// WithHome sets the directory that "~" (and a leading $HOME or ${HOME})
// expands to in the path functions. The directory must be absolute. Without
// this option New uses os.UserHomeDir of the process, falling back to "/".
func WithHome(dir string) Option {
	return func(c *Config) error {
		if dir == "" {
			return errors.New("stdlib: WithHome: empty directory")
		}
		d := strings.ReplaceAll(dir, `\`, "/")
		if !path.IsAbs(d) && !isWindowsAbs(d) {
			return fmt.Errorf("stdlib: WithHome: %q is not an absolute directory", dir)
		}
		c.home = path.Clean(d)
		return nil
	}
}

// WithSymlinks lets path.abs resolve symbolic links on disk (off by default).
//
// The trade-off: with resolution on, a policy sees where a path really leads
// (a link in the workspace pointing at ~/.ssh is caught), but evaluation reads
// the file system of the host running celguard, which may not be the machine
// the agent's tool runs on, costs a system call per path component, and can
// change between the check and the tool's own use of the path (a TOCTOU
// window). With it off, the path functions are pure and deterministic and see
// only what the tool call says.
func WithSymlinks(on bool) Option {
	return func(c *Config) error {
		c.symlinks = on
		return nil
	}
}

// WithEstimatorPrices says that the host prices stdlib calls at run time
// through the Lib's ActualCostEstimator, on every program that tracks cost
// (cel.CostTracking(lib.ActualCostEstimator()), as celenv's
// ProgramOptions do), so the libraries install no per-overload cost
// trackers of their own. The prices are the same: the estimator answers
// for every overload a tracker would, with the same model (CallCost), and
// for the late-bound calls the trackers miss. What it saves: cel-go copies
// the libraries' tracker options into every program and builds a table of
// them for every program that tracks cost, which was about 1 MB of a hook
// process's allocations. Without this option (the default) a Lib's
// libraries price their calls in any environment, estimator or not.
func WithEstimatorPrices() Option {
	return func(c *Config) error {
		c.estimatorPrices = true
		return nil
	}
}

// WithVersion pins the stdlib version: only functions introduced in that
// version or earlier are declared. The default is LatestVersion.
func WithVersion(v uint32) Option {
	return func(c *Config) error {
		if v < 1 || v > LatestVersion {
			return fmt.Errorf("stdlib: WithVersion: version %d is not in [1, %d]", v, LatestVersion)
		}
		c.version = v
		return nil
	}
}

// Lib is a configured set of celguard's CEL libraries. It is immutable after
// New and safe for concurrent use; per-call state lives in a CallScope.
type Lib struct {
	cfg    Config
	fns    []*fnDef
	byID   map[string]*ovDef
	byName map[string]*fnDef
}

// New builds a Lib from the options.
func New(opts ...Option) (*Lib, error) {
	cfg := Config{version: LatestVersion}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.home == "" {
		cfg.home = "/"
		if h, err := os.UserHomeDir(); err == nil && h != "" {
			h = strings.ReplaceAll(h, `\`, "/")
			if path.IsAbs(h) || isWindowsAbs(h) {
				cfg.home = path.Clean(h)
			}
		}
	}
	l := &Lib{cfg: cfg}
	l.fns = l.buildRegistry()
	l.byID = make(map[string]*ovDef)
	l.byName = make(map[string]*fnDef)
	for _, d := range l.fns {
		l.byName[d.name] = d
		for _, o := range d.ovs {
			l.byID[o.id] = o
		}
	}
	return l, nil
}

// registry returns every stdlib function, whatever the pinned version.
func (l *Lib) registry() []*fnDef { return l.fns }

// buildRegistry declares the functions of all libraries, bound to l.
func (l *Lib) buildRegistry() []*fnDef {
	var out []*fnDef
	out = append(out, l.hashFns()...)
	out = append(out, l.shellFns()...)
	out = append(out, l.shellWritesFns()...)
	out = append(out, l.shellModelFns()...)
	out = append(out, l.pathFns()...)
	out = append(out, l.globFns()...)
	out = append(out, l.globReachFns()...)
	out = append(out, l.secretsFns()...)
	out = append(out, l.urlFns()...)
	out = append(out, l.mcpFns()...)
	out = append(out, l.toolchainFns()...)
	out = append(out, l.sqlFns()...)
	return out
}

// Home returns the directory "~" expands to.
func (l *Lib) Home() string { return l.cfg.home }

// Symlinks reports whether the path functions resolve symbolic links on
// the host's file system (WithSymlinks).
func (l *Lib) Symlinks() bool { return l.cfg.symlinks }

// Version returns the stdlib version the Lib declares.
func (l *Lib) Version() uint32 { return l.cfg.version }

// EnvOptions returns every library as a cel.EnvOption: canonical, hash,
// shell, path, glob, secrets and url, each a cel.Lib that also installs its
// compile-time validators of literal arguments and its cost estimates.
//
// The shell.parse, shell.commands, shell.programs and secrets.* functions are
// late-bound: an evaluation must supply a CallScope through its activation
// (see CallScope.Activation), or those calls evaluate to "no such overload"
// errors.
func (l *Lib) EnvOptions() []cel.EnvOption {
	return []cel.EnvOption{
		CanonicalLib(),
		l.Hash(),
		l.Shell(),
		l.Path(),
		l.Glob(),
		l.Secrets(),
		l.URL(),
		l.MCP(),
		l.Toolchain(),
		l.SQL(),
	}
}

// libNamespaces are the namespaces of the libraries EnvOptions installs
// after the canonical one.
var libNamespaces = [...]string{"hash", "shell", "path", "glob", "secrets", "url", "mcp", "toolchain", "sql"}

// LibraryNames returns the names of the libraries EnvOptions installs
// (celguard.lib.<namespace>), as an environment built from them lists
// them (cel.Env.Libraries), without building one.
func LibraryNames() []string {
	out := []string{canonicalLib{}.LibraryName()}
	for _, ns := range libNamespaces {
		out = append(out, (&library{ns: ns}).LibraryName())
	}
	return out
}

// NewCallScope returns a fresh per-call memo. Use one per tool call (or Reset
// a pooled one between calls); a CallScope is used by one goroutine at a time.
func (l *Lib) NewCallScope() *CallScope { return newCallScope(l) }

// CostEstimator returns a static cost estimator for the stdlib functions. It
// returns nil for every other function and for sizes, so it can be chained in
// front of a host's own estimator. The libraries also install the same
// estimates as per-overload cost options, so an environment built from
// EnvOptions gets them without this.
func (l *Lib) CostEstimator() cost.Estimator { return costEstimator{l: l} }

// ActualCostEstimator returns the runtime cost of the stdlib functions for
// cel.CostTracking; it returns nil for other functions, which keeps cel-go's
// default cost for them.
func (l *Lib) ActualCostEstimator() cost.ActualCostEstimator { return actualCost{l: l} }

// fnsFor returns the functions of the namespace available at the Lib's version.
func (l *Lib) fnsFor(ns string) []*fnDef {
	var out []*fnDef
	for _, f := range l.registry() {
		if f.ns == ns && f.version <= l.cfg.version {
			out = append(out, f)
		}
	}
	return out
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && p[2] == '/' &&
		(('a' <= p[0] && p[0] <= 'z') || ('A' <= p[0] && p[0] <= 'Z'))
}
