package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// Effective is the PolicyRef of the layered set in force: what eval and
// the hooks decide with here (the built-in bundle, the user's and the
// project's policies).
const Effective = "effective"

// ErrNoRevision is the error of a PolicyRef naming a git revision the
// repository does not have (a shallow clone's missing parent among them).
var ErrNoRevision = errors.New("no such git revision")

// PolicyRef says where one side of a diff's policies come from:
//
//   - "effective": the layered set in force in WorkDir (Effective);
//   - "REV:PATH": the policy files under PATH (a file or a directory,
//     relative to WorkDir) at git revision REV of WorkDir's repository,
//     e.g. HEAD~1:policies/, read with git without touching the work tree
//     (their names in reports are REV:PATH/FILE);
//   - a path: the policy files on disk, as --policy reads them.
//
// Each side also has the built-in tool classes, as --policy does.
type PolicyRef struct {
	Ref     string
	WorkDir string // "": the current directory
}

// Config is the composition root's configuration of the ref's policies.
func (r PolicyRef) Config(ctx context.Context) (celguard.Config, error) {
	if r.Ref == Effective {
		return celguard.Config{Policies: policies.Options{WorkDir: r.WorkDir}}, nil
	}
	p := r.Ref
	if r.WorkDir != "" && !strings.HasPrefix(p, "/") {
		p = r.WorkDir + "/" + p
	}
	if rev, dir, ok := strings.Cut(r.Ref, ":"); ok && rev != "" {
		if _, err := os.Stat(p); err != nil {
			srcs, err := gitSources(ctx, r.WorkDir, rev, dir)
			if err != nil {
				return celguard.Config{}, err
			}
			srcs = append(srcs, policies.ToolClasses())
			return celguard.Config{Sources: func() ([]policy.Source, error) { return srcs, nil }}, nil
		}
	}
	return celguard.Config{Policies: policies.Options{Explicit: []string{p}}}, nil
}

// git runs git in dir and returns its standard output.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// gitSources reads the policy files under dir at revision rev, with the
// rules of policy.LoadFS: *.yaml and *.yml files but test suites, none
// below a directory named testdata or starting with . or _.
func gitSources(ctx context.Context, workDir, rev, dir string) ([]policy.Source, error) {
	if _, err := git(ctx, workDir, "rev-parse", "--verify", "--quiet", rev+"^{commit}"); err != nil {
		return nil, fmt.Errorf("%s: %w (a shallow clone may not have it)", rev, ErrNoRevision)
	}
	out, err := git(ctx, workDir, "ls-tree", "-r", "-z", "--full-name", "--name-only", rev, "--", dir)
	if err != nil {
		return nil, err
	}
	prefix, err := git(ctx, workDir, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, err
	}
	root := path.Clean(strings.TrimSpace(string(prefix)) + dir)
	var srcs []policy.Source
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		rel := strings.TrimPrefix(strings.TrimPrefix(name, root), "/")
		if name == "" || !policy.IsPolicyFile(name) || skippedDir(rel) {
			continue
		}
		data, err := git(ctx, workDir, "cat-file", "blob", rev+":"+name)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, policy.Source{Name: rev + ":" + name, Data: data, Layer: policy.LayerExplicit})
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%s:%s holds no policy file", rev, dir)
	}
	return srcs, nil
}

// skippedDir reports whether a slash path (relative to the directory
// walked) lies below a directory LoadFS does not walk.
func skippedDir(name string) bool {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		b := path.Base(d)
		if strings.HasPrefix(b, ".") || strings.HasPrefix(b, "_") || b == "testdata" {
			return true
		}
	}
	return false
}
