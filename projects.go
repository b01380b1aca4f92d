package celguard

import (
	"container/list"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
)

// Bounds of the project guards a Guard keeps (Config.PerProject).
const (
	// DefaultMaxProjects bounds how many projects' compiled sets a Guard
	// keeps at once; the least recently used is dropped past it (and
	// compiled again when a call comes from it).
	DefaultMaxProjects = 64
	// DefaultProjectCheck is how often a project's policy files and trust
	// entry are read again for a change when the caller does not say
	// which digest it expects (ForWorkDir with want empty).
	DefaultProjectCheck = 2 * time.Second
)

// projects are the guards of the projects a per-project Guard has decided
// calls in, by project root (policies.ProjectWalk: symbolic links kept),
// least recently used last.
type projects struct {
	own   string // the project root of the guard's own work directory ("" when unknown)
	max   int
	check time.Duration

	mu    sync.Mutex
	byDir map[string]*list.Element // of *projectGuard
	lru   *list.List
}

// projectGuard is one project's guard and when its sources were last read.
type projectGuard struct {
	root    string
	guard   *Guard
	checked atomic.Int64 // unix nanoseconds of the last Reload
	busy    atomic.Bool  // a Reload is running
}

// perProject reports whether c reads the project layer of each call's
// work directory (Config.PerProject, when the layers are read and the
// project directory is not named).
func (c Config) perProject() bool {
	return c.PerProject && c.Sources == nil && c.Policies.ProjectDir == "" && c.layersRead()
}

// newProjects is the project cache of a guard loaded with c.
func newProjects(c Config) *projects {
	p := &projects{max: c.MaxProjects, check: DefaultProjectCheck, byDir: map[string]*list.Element{}, lru: list.New()}
	if p.max <= 0 {
		p.max = DefaultMaxProjects
	}
	work := c.Policies.WorkDir
	if work == "" {
		work, _ = os.Getwd()
	}
	if work != "" {
		p.own, _, _ = policies.ProjectWalk(work)
	}
	return p
}

// ForWorkDir returns the guard that decides the calls made in the work
// directory dir, as `celguard hook` run in dir decides them: the same
// built-in, user, explicit, registered and admin layers, bundles and
// deployment settings as g, and the project layer of dir's project (the
// .celguard/ at the root of the repository holding dir, trusted or not as
// the trust store says). It is g itself when g was not loaded with
// Config.PerProject, when dir is empty, relative, or not a directory on
// this machine (an agent on another machine: g's own project decides, as
// before), or when dir is in g's own project.
//
// Each project is compiled once and kept (at most Config.MaxProjects, the
// least recently used dropped past it); its engine shares g's state store,
// decision sinks, judges and approver, so a session's counters, halts and
// approvals are the same whichever project decides its call. A project's
// sources are read again, and compiled when they changed (its policy
// files, its trust entry, the user's or the admin's layer: Guard.Reload),
// when want is not empty and is not the digest in force (the caller
// computed the digest it expects), or else at most every
// DefaultProjectCheck. A project whose policies do not compile is an
// error (the call fails closed), as it is for the hook.
func (g *Guard) ForWorkDir(dir, want string) (*Guard, error) {
	if g.projects == nil || dir == "" || !filepath.IsAbs(dir) {
		return g.fresh(want)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return g.fresh(want)
	}
	// Keyed by the root as the path names it, symbolic links kept: a hook
	// run in dir names the project's sources (and its digest and answers)
	// by that path, and the trust store resolves the links itself.
	root, _, err := policies.ProjectWalk(dir)
	if err != nil {
		return nil, fmt.Errorf("celguard: the project of %s: %w", dir, err)
	}
	if root == g.projects.own {
		return g.fresh(want)
	}
	pg, err := g.project(root)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	stale := want != "" && want != pg.guard.Digest()
	if !stale && now-pg.checked.Load() < int64(g.projects.check) {
		return pg.guard, nil
	}
	if !stale && !pg.busy.CompareAndSwap(false, true) {
		return pg.guard, nil // another call is reading them: the set in force decides
	}
	if !stale {
		defer pg.busy.Store(false)
	}
	if _, err := pg.guard.Reload(false); err != nil {
		return nil, err
	}
	pg.checked.Store(now)
	return pg.guard, nil
}

// fresh is g, its sources read again first when want is not empty and is
// not the digest in force (the caller expects another set).
func (g *Guard) fresh(want string) (*Guard, error) {
	if want != "" && want != g.Digest() {
		if _, err := g.Reload(false); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// project returns the guard of the project at root, compiled on first use.
func (g *Guard) project(root string) (*projectGuard, error) {
	p := g.projects
	p.mu.Lock()
	if el, ok := p.byDir[root]; ok {
		p.lru.MoveToFront(el)
		p.mu.Unlock()
		return el.Value.(*projectGuard), nil
	}
	p.mu.Unlock()
	// Compiled outside the lock: another project's calls need not wait.
	pg, err := g.loadProject(root)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byDir[root]; ok { // compiled twice at once: keep the first
		p.lru.MoveToFront(el)
		return el.Value.(*projectGuard), nil
	}
	p.byDir[root] = p.lru.PushFront(pg)
	for p.lru.Len() > p.max {
		last := p.lru.Back()
		p.lru.Remove(last)
		delete(p.byDir, last.Value.(*projectGuard).root)
	}
	return pg, nil
}

// loadProject compiles the sources of g's configuration with the project
// at root, into an engine with g's engine options.
func (g *Guard) loadProject(root string) (*projectGuard, error) {
	cfg := g.cfg
	cfg.Policies.WorkDir = root
	d, man, err := cfg.selectManifest()
	if err != nil {
		return nil, err
	}
	set, err := compile.Compile(d.Sources, g.compile...)
	if err != nil {
		return nil, err
	}
	eng, err := eval.New(set, g.eopts...)
	if err != nil {
		return nil, fmt.Errorf("celguard: %w", err)
	}
	pg := &projectGuard{root: root, guard: &Guard{cfg: cfg, compile: g.compile, eopts: g.eopts, engine: eng, tel: g.tel,
		discovery: d, digest: set.Digest(), tried: set.Digest(), manifest: man}}
	pg.checked.Store(time.Now().UnixNano())
	return pg, nil
}

// Projects are the project roots whose guards g keeps (Config.PerProject),
// most recently used first; nil without.
func (g *Guard) Projects() []string {
	if g.projects == nil {
		return nil
	}
	g.projects.mu.Lock()
	defer g.projects.mu.Unlock()
	out := make([]string, 0, g.projects.lru.Len())
	for el := g.projects.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*projectGuard).root)
	}
	return out
}

// SourcesDigest is the digest of the policy set c would compile for calls
// made in the work directory dir (Config.Policies.WorkDir = dir when c
// reads the project layer of each work directory, else c as it is),
// without compiling it: what ForWorkDir's guard reports as its Digest once
// it has read the same files. A caller that asks another process to
// decide compares the digest the answer names with this one.
func (c Config) SourcesDigest(ctx context.Context, dir string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if c.perProject() && dir != "" {
		c.Policies.WorkDir = dir
	}
	d, err := c.Select()
	if err != nil {
		return "", err
	}
	return compile.Digest(d.Sources), nil
}
