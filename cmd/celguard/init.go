package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// scaffold holds the files celguard init writes.
//
//go:embed scaffold/policy.yaml scaffold/policy_test.yaml scaffold/celguard.yml
var scaffold embed.FS

// scaffoldFiles maps each embedded file to where init writes it, relative
// to the repository root.
var scaffoldFiles = []struct{ from, to string }{
	{"scaffold/policy.yaml", filepath.Join(".celguard", "policy.yaml")},
	{"scaffold/policy_test.yaml", filepath.Join(".celguard", "policy_test.yaml")},
	{"scaffold/celguard.yml", filepath.Join(".github", "workflows", "celguard.yml")},
}

// refPlaceholder is replaced in the workflow with the celguard source it
// builds (workflowRef).
const refPlaceholder = "{{CELGUARD_REF}}"

// initParams is what `celguard init` was asked to do.
type initParams struct {
	dir string
	stdio
}

func newInitCmd(sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold the project's policy, its test suite and a CI workflow",
		Long: `Init writes a starter policy and what keeps it honest, at the root of the
git repository that holds DIR (the current directory by default; DIR itself
when it is in no repository):

  .celguard/policy.yaml                a small policy to edit (blocks rm -rf / and
                                       curl | sh, asks before git push, keeps .env
                                       files and keys out of reach)
  .celguard/policy_test.yaml           test cases for it, all passing
  .github/workflows/celguard.yml       a GitHub Actions workflow that builds
                                       celguard, lints .celguard/ (annotating the
                                       pull request) and tests it (JUnit)

.celguard/ at the repository root is the project's policy layer: eval and
hook read it once you trust it (celguard trust). The workflow lints only
.celguard/, never the repository's other YAML files, and builds celguard
from its source at the release tag or commit of the celguard that ran init
(CELGUARD_REF in the workflow; a development build writes "main" and says
so: pin it).

Init never overwrites: if any of the files exists, it writes nothing and
exits 2. It prints each file it wrote.

Exit codes: 0 when the files were written, 2 when one exists already or a
directory cannot be written.`,
		Example: `  celguard init
  celguard lint .celguard/ && celguard test .celguard/`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("name at most one directory (e.g. celguard init, or celguard init path/to/repo)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p := initParams{dir: ".", stdio: sio}
			if len(args) == 1 {
				p.dir = args[0]
			}
			return status(runInit(cmd.Context(), p))
		},
	}
}

// repoRoot returns the root of the git repository holding dir (which need
// not exist yet), or dir when there is none.
func repoRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return abs, nil
		}
	}
}

// workflowRef is the celguard source the workflow builds: this build's tag
// or commit, or "main" with a note to pin it.
func workflowRef() (ref string, pinned bool) {
	if ref, ok := currentBuild().SourceRef(); ok {
		return ref, true
	}
	return "main # a development build of celguard wrote this: pin a release tag or commit", false
}

// shown is path as init reports it: relative to the working directory when
// it is below it.
func shown(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(path)
}

func runInit(_ context.Context, p initParams) int {
	root, err := repoRoot(p.dir)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard init: %v\n", err)
		return exitUsage
	}
	var exist []string
	for _, f := range scaffoldFiles {
		target := filepath.Join(root, f.to)
		if _, err := os.Lstat(target); err == nil {
			exist = append(exist, shown(target))
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(p.stderr, "celguard init: %v\n", describe(err))
			return exitUsage
		}
	}
	if len(exist) > 0 {
		fmt.Fprintf(p.stderr, "celguard init: %s already exists; nothing was written (init never overwrites)\n", strings.Join(exist, ", "))
		return exitUsage
	}
	ref, pinned := workflowRef()
	for _, f := range scaffoldFiles {
		target := filepath.Join(root, f.to)
		if err := writeScaffold(f.from, target, ref); err != nil {
			fmt.Fprintf(p.stderr, "celguard init: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(p.stdout, "wrote %s\n", shown(target))
	}
	if !pinned {
		fmt.Fprintf(p.stdout, "note: %s builds celguard from main: this celguard is a development build; set CELGUARD_REF to a release tag or commit\n",
			shown(filepath.Join(root, scaffoldFiles[2].to)))
	}
	dir := shown(filepath.Join(root, ".celguard"))
	fmt.Fprintf(p.stdout, "next: celguard lint %s/ && celguard test %s/, then celguard trust to let eval and hook read it\n", dir, dir)
	return exitOK
}

// writeScaffold writes the scaffold file from to target, the workflow's
// celguard reference filled in, never over an existing file.
func writeScaffold(from, target, ref string) error {
	data, err := scaffold.ReadFile(from)
	if err != nil {
		return err
	}
	data = bytes.ReplaceAll(data, []byte(refPlaceholder), []byte(ref))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return describe(err)
	}
	// O_EXCL: a file that appeared since the check is still not
	// overwritten.
	w, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, err = w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return describe(err)
	}
	return nil
}
