package main

import (
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

// scaffoldFiles maps each embedded file to where init writes it in DIR.
var scaffoldFiles = []struct{ from, to string }{
	{"scaffold/policy.yaml", "policy.yaml"},
	{"scaffold/policy_test.yaml", "policy_test.yaml"},
	{"scaffold/celguard.yml", filepath.Join(".github", "workflows", "celguard.yml")},
}

// initParams is what `celguard init` was asked to do.
type initParams struct {
	dir string
	stdio
}

func newInitCmd(sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "init DIR",
		Short: "Scaffold a policy, its test suite and a CI workflow in DIR",
		Long: `Init writes a starter policy and what keeps it honest:

  DIR/policy.yaml                      a small policy to edit (blocks rm -rf / and
                                       curl | sh, asks before git push, keeps .env
                                       files and keys out of reach)
  DIR/policy_test.yaml                 test cases for it, all passing
  DIR/.github/workflows/celguard.yml   a GitHub Actions workflow that installs
                                       celguard, lints the policies (annotating
                                       the pull request) and tests them (JUnit)

DIR is created if needed. Init never overwrites: if any of the files exists,
it writes nothing and exits 2.

Exit codes: 0 when the files were written, 2 when one exists already or DIR
cannot be written.`,
		Example: `  celguard init policies
  celguard lint policies && celguard test policies`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name the one directory to scaffold (e.g. celguard init policies)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(runInit(cmd.Context(), initParams{dir: args[0], stdio: sio}))
		},
	}
}

func runInit(_ context.Context, p initParams) int {
	var exist []string
	for _, f := range scaffoldFiles {
		target := filepath.Join(p.dir, f.to)
		if _, err := os.Lstat(target); err == nil {
			exist = append(exist, target)
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(p.stderr, "celguard init: %v\n", describe(err))
			return exitUsage
		}
	}
	if len(exist) > 0 {
		fmt.Fprintf(p.stderr, "celguard init: %s already exists; nothing was written (init never overwrites)\n", strings.Join(exist, ", "))
		return exitUsage
	}
	for _, f := range scaffoldFiles {
		data, err := scaffold.ReadFile(f.from)
		if err != nil {
			fmt.Fprintf(p.stderr, "celguard init: %v\n", err)
			return exitUsage
		}
		target := filepath.Join(p.dir, f.to)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			fmt.Fprintf(p.stderr, "celguard init: %v\n", describe(err))
			return exitUsage
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
			fmt.Fprintf(p.stderr, "celguard init: %v\n", describe(err))
			return exitUsage
		}
		fmt.Fprintf(p.stdout, "wrote %s\n", filepath.ToSlash(target))
	}
	fmt.Fprintf(p.stdout, "next: celguard lint %s && celguard test %s\n", p.dir, p.dir)
	return exitOK
}
