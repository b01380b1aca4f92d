package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// lintParams is what `celguard lint` was asked to do.
type lintParams struct {
	paths []string
	stdio
}

func newLintCmd(sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "lint PATH...",
		Short: "Check policy files and report every problem",
		Long: `Lint compiles the policy files and directories given and prints every
diagnostic to stdout as

  file:line:col: severity: code: message

followed by the source line and a caret under the column. A summary line
goes to stderr. Directories are searched for *.yaml and *.yml files, skipping
*_test.yaml suites, testdata and names starting with "." or "_". All the
paths are checked together as one policy set, so duplicate rule ids across
files are found.

Exit codes: 0 when there is no error (warnings pass), 1 when there are
errors, 2 when a path cannot be read.`,
		Example: `  # Check one file
  celguard lint policies/workspace.yaml

  # Check every policy in two directories as one set
  celguard lint policies/ team-policies/`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("no paths given: name the policy files or directories to check")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(runLint(cmd.Context(), lintParams{paths: args, stdio: sio}))
		},
	}
}

func runLint(_ context.Context, p lintParams) int {
	srcs, err := loadSources(p.paths)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard lint: %v\n", err)
		return exitUsage
	}
	_, ds, err := compile.Check(srcs)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard lint: %v\n", err)
		return exitUsage
	}
	if err := output.DiagnosticsText(p.stdout, ds, policy.LinesOf(srcs)); err != nil {
		fmt.Fprintf(p.stderr, "celguard lint: cannot write the diagnostics: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(p.stderr, output.Summary(ds, len(srcs)))
	if ds.HasErrors() {
		return exitFindings
	}
	return exitOK
}
