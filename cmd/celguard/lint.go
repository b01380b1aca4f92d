package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// lintParams is what `celguard lint` was asked to do.
type lintParams struct {
	policies selection // PATH..., --policy, --effective and the layer flags
	format   string    // text | json | sarif | github
	failOn   string    // error | warning | info
	// hosts are --hosts: warn where a rule's verdict degrades on them.
	hosts []string
	stdio
}

func newLintCmd(sio stdio) *cobra.Command {
	p := lintParams{stdio: sio}
	cmd := &cobra.Command{
		Use:   "lint PATH...",
		Short: "Check policy files and report every problem",
		Long: `Lint compiles the policy files and directories given, runs the lint
analyses on them, and prints every diagnostic to stdout. Directories are
searched for *.yaml and *.yml files, skipping testdata and names starting
with "." or "_". All the paths are checked together as one policy set, so
duplicate rule ids across files are found.

Test suites are linted too: the *_test.yaml files named, and those below
the directories given (as celguard test finds them). A suite's problems
(a misspelt key, a value of the wrong type, a step with no event, a
policies entry that names nothing) are reported at their line and column
with the codes a policy file's get, in every format.

--policy names more paths, as the arguments do. --effective lints the set
in force here: the layers as eval and hook compile them from the current
directory (the built-in bundle, the user's policies, the project's
.celguard/), with the paths, if any, as the explicit layer on top. It reports
the diagnostics of every layer at their files' positions, the rules of one
layer that a rule of another always pre-empts (cross_layer_shadowed), and
the allow rules of a project not yet trusted that would pre-empt a stricter
rule once it is (untrusted_would_relax). --bundle, --include, --exclude,
--user-dir and --project-dir choose the layers as they do for eval, hook and
test, and read them too (with any of them, no path is needed). Without them
only the paths are checked, with the built-in tool classes.

--hosts claude-code,codex warns (host_degrades) at each rule whose verdict
one of the named hosts does not honour exactly, per the host capability
matrix the real-host suite measured ('celguard hosts' prints it): an ask on
Codex becomes a deny, a redaction on Gemini CLI a tool error.

Diagnostics are errors (the set does not compile), warnings (it compiles,
but something cannot work as written: a rule that can never fire, an unused
variable or counter, a block without a reason, an expression over the cost
budget) and info. docs/diagnostics.md explains every code and its fix.

Formats (--format):
  text    file:line:col: severity: code: message, then the source line and
          a caret under the column; coloured when stdout is a terminal
          (NO_COLOR turns colour off)
  json    one JSON document: docs/lint-json.md
  sarif   SARIF 2.1.0, for GitHub code scanning and other SARIF viewers
  github  GitHub Actions workflow commands (::error file=...::message) that
          annotate the pull request
A summary line goes to stderr in every format.

Exit codes: 0 when no diagnostic is at or above --fail-on (error by
default, so warnings pass), 1 when one is, 2 for bad flags or a path that
cannot be read.`,
		Example: `  # Check one file
  celguard lint policies/workspace.yaml

  # Check every policy in two directories as one set; warnings fail too
  celguard lint --fail-on warning policies/ team-policies/

  # Check the set in force here: every layer, and what pre-empts what
  celguard lint --effective

  # Warn where a rule degrades on the hosts the team uses
  celguard lint --hosts claude-code,codex policies/

  # Upload to GitHub code scanning
  celguard lint --format sarif policies/ > celguard.sarif

  # Annotate the pull request from a GitHub Actions step
  celguard lint --format github policies/`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 && p.policies.empty() {
				return fmt.Errorf("no paths given: name the policy files or directories to check")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p.policies.paths = append(p.policies.paths, args...)
			return status(runLint(cmd.Context(), p))
		},
	}
	p.policies.addFlags(cmd.Flags())
	p.policies.addEffectiveFlag(cmd.Flags())
	cmd.Flags().StringVar(&p.format, "format", output.FormatText, "output format: "+strings.Join(output.DiagnosticFormats, ", "))
	cmd.Flags().StringVar(&p.failOn, "fail-on", string(policy.SeverityError), "lowest severity that fails the run: error, warning or info")
	cmd.Flags().StringSliceVar(&p.hosts, "hosts", nil, "warn at each rule whose verdict degrades on one of these hosts ("+strings.Join(hooks.Hosts(), ", ")+")")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(output.DiagnosticFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"error", "warning", "info"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runLint(_ context.Context, p lintParams) int {
	if !output.ValidDiagnosticFormat(p.format) {
		fmt.Fprintf(p.stderr, "celguard lint: unknown --format %q: use one of %s\n", p.format, strings.Join(output.DiagnosticFormats, ", "))
		return exitUsage
	}
	failOn := policy.Severity(p.failOn)
	if failOn.Rank() == 0 {
		fmt.Fprintf(p.stderr, "celguard lint: unknown --fail-on %q: use error, warning or info\n", p.failOn)
		return exitUsage
	}
	for _, h := range p.hosts {
		if _, err := hooks.LookupHost(h); err != nil {
			fmt.Fprintf(p.stderr, "celguard lint: --hosts: %v\n", err)
			return exitUsage
		}
	}
	ds, srcs, suites, err := p.findings()
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard lint: %v\n", err)
		return exitUsage
	}
	files := userFiles(srcs, suites)
	opts := output.DiagnosticOptions{Lines: policy.LinesOf(append(srcs, suites...)), Color: colorable(p.stdout), Files: files, ToolVersion: currentBuild().Version}
	if err := output.Diagnostics(p.stdout, p.format, ds, opts); err != nil {
		fmt.Fprintf(p.stderr, "celguard lint: cannot write the diagnostics: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(p.stderr, output.Summary(ds, files))
	for _, d := range ds.Unsuppressed() { // a # celguard:ignore comment said "I know"
		if d.Severity.Rank() >= failOn.Rank() {
			return exitFindings
		}
	}
	return exitOK
}

// userFiles counts the files lint read that are the user's: the suites and
// the policies, not the built-in tool classes and bundle.
func userFiles(srcs, suites []policy.Source) int {
	files := len(suites)
	for _, src := range srcs {
		if src.Layer != policy.LayerBuiltin {
			files++
		}
	}
	return files
}

// findings lints the test suites and the policies p names, and returns
// the diagnostics, sorted, with the policy sources and suites read. The
// error is one that stops the lint (a path that cannot be read, a set that
// cannot be checked).
func (p lintParams) findings() (policy.Diagnostics, []policy.Source, []policy.Source, error) {
	suites, err := suiteSources(p.policies.paths)
	if err != nil {
		return nil, nil, nil, describe(err)
	}
	var ds policy.Diagnostics
	for _, s := range suites {
		ds = append(ds, lintSuite(s)...)
	}
	sel := p.policies
	sel.paths, _ = splitSuites(sel.paths)
	var srcs []policy.Source
	if len(sel.paths) > 0 || sel.layerFlags() || len(suites) == 0 {
		srcs, err = sel.sources(classesOnly)
		if errors.Is(err, policies.ErrNoPolicyFiles) && len(suites) > 0 {
			err = nil // suites alone (with inline policies, or elsewhere)
		}
		// A BitCode guard file that cannot be read natively: its
		// diagnostics are findings at its positions, like a policy's.
		if gds := (policy.Diagnostics)(nil); errors.As(err, &gds) {
			ds, err = append(ds, gds...), nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if len(srcs) == 0 {
		ds.Sort()
		return ds, srcs, suites, nil
	}
	set, pds, err := compile.Check(srcs)
	if err != nil {
		return nil, nil, nil, err
	}
	ds = append(ds, pds...)
	if set == nil {
		ds.Sort()
		return ds, srcs, suites, nil
	}
	ds.Sort()
	// What trusting an untrusted project would relax (nothing to say
	// without one).
	rs, err := compile.Relaxations(srcs)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard lint: cannot tell what trusting the project would relax: %v\n", err)
	}
	ds = append(ds, rs...)
	if len(p.hosts) > 0 {
		hds, err := hooks.DegradedRules(set, p.hosts)
		if err != nil {
			return nil, nil, nil, err
		}
		ds = append(ds, hds...)
	}
	ds.Sort()
	return ds, srcs, suites, nil
}

// colorable reports whether w is a terminal that should get colour: a
// character device, with NO_COLOR unset (https://no-color.org) and TERM not
// "dumb".
func colorable(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
