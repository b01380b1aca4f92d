package policies

import (
	"os"
	"path/filepath"

	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/trust"
)

// Watch is a path whose state decides what Select reads: with Tree,
// everything below it and the content of its files; without, only whether
// it is there and what it is (a directory whose existence or ownership
// discovery checks, a .git entry that marks a project root).
type Watch struct {
	Path string
	Tree bool
}

// WatchRoots are the paths Select consults for o, absolute: every file
// and directory it may read and every path whose existence or ownership
// changes what it reads. Two Selects with the same Options over paths in
// the same state read the same sources; a decision daemon records them
// (daemonwire.Manifest) so that a client can check, without reading and
// parsing the policies, that nothing changed since they were read.
//
// Keep it in step with DiscoverLayers and Select: it is a superset of what
// they read (whole directories, not only the policy files in them).
func WatchRoots(o Options) ([]Watch, error) {
	var out []Watch
	tree := func(p string) error {
		abs, err := filepath.Abs(p)
		if err == nil {
			out = append(out, Watch{Path: abs, Tree: true})
		}
		return err
	}
	for _, p := range o.Explicit {
		if err := tree(p); err != nil {
			return nil, err
		}
	}
	if o.explicitOnly() {
		return out, nil
	}
	if user, _ := userDir(o.UserDir); user != "" {
		if err := tree(user); err != nil {
			return nil, err
		}
	}
	if home := homeDir(o); home != "" {
		for _, d := range importer.GuardDirs(home) {
			if err := tree(d); err != nil {
				return nil, err
			}
		}
	}
	switch o.ProjectDir {
	case "-":
	case "":
		root, checked, err := ProjectWalk(o.WorkDir)
		if err != nil {
			return nil, err
		}
		for _, c := range checked {
			out = append(out, Watch{Path: c})
		}
		out = append(out, Watch{Path: root})
		if err := projectWatch(&out, filepath.Join(root, ".celguard"), o.TrustFile); err != nil {
			return nil, err
		}
	default:
		if err := projectWatch(&out, o.ProjectDir, o.TrustFile); err != nil {
			return nil, err
		}
	}
	site := admin
	if err := tree(site.dir); err != nil {
		return nil, err
	}
	for d := filepath.Dir(site.dir); ; d = filepath.Dir(d) {
		out = append(out, Watch{Path: d})
		if d == site.top || filepath.Dir(d) == d {
			break
		}
	}
	return out, nil
}

// projectWatch adds the project layer at dir: its directory, the guard
// directories beside it and the trust store.
func projectWatch(out *[]Watch, dir, trustFile string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	*out = append(*out, Watch{Path: dir, Tree: true})
	for _, g := range importer.GuardDirs(filepath.Dir(dir)) {
		*out = append(*out, Watch{Path: g, Tree: true})
	}
	switch trustFile {
	case "-":
		return nil
	case "":
		if trustFile, err = trust.DefaultPath(); err != nil {
			return nil // no store is read: the project is untrusted
		}
	}
	abs, err := filepath.Abs(trustFile)
	if err == nil {
		*out = append(*out, Watch{Path: abs, Tree: true})
	}
	return err
}

// ProjectWalk finds the directory that holds the project layer of work
// (the current directory when empty), as Select does, without resolving
// symbolic links: the nearest directory at or above work holding .git,
// or work itself outside a repository. checked are the .git paths it
// looked at, in order, the last one the one found (when one was).
func ProjectWalk(work string) (root string, checked []string, err error) {
	if work == "" {
		if work, err = os.Getwd(); err != nil {
			return "", nil, err
		}
	}
	abs, err := filepath.Abs(work)
	if err != nil {
		return "", nil, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		g := filepath.Join(d, ".git")
		checked = append(checked, g)
		if _, err := os.Stat(g); err == nil {
			return d, checked, nil
		}
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	return abs, checked, nil
}
