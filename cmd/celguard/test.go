package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// testParams is what `celguard test` was asked to do.
type testParams struct {
	paths       []string  // the suites
	policies    selection // --policy, --effective and the layer flags: under every suite's policies
	run         string
	format      string // text | json | junit
	coverage    bool
	coverageMin float64 // percent; negative when not given
	stdio
}

// zeroDurations makes reports deterministic for golden files; only the
// tests set it.
var zeroDurations bool

func newTestCmd(sio stdio) *cobra.Command {
	p := testParams{stdio: sio}
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run policy test suites (*_test.yaml)",
		Long: `Test runs every *_test.yaml suite in the files and directories given (the
built-in policies' suites when none are given). Each case is a sequence of
steps (turn start, before call, after call with a result, clock advance)
with the decision expected at each step. A suite tests the policies it names,
or every policy file in its directory.

A suite's policies: list entries are policy files or directories relative
to the suite, builtin:NAME for a built-in bundle (recommended, minimal, all,
none) or one built-in policy, e.g. [builtin:recommended, ./team].

--effective runs every suite against the set in force here: the layers as
eval and hook read them from the current directory (the built-in bundle,
the user's policies, the project's .celguard/). --policy, --bundle,
--include, --exclude, --user-dir and --project-dir choose policies to test
every suite's policies with, as they choose the policies of eval, hook and
lint: --policy files alone come with the built-in tool classes; the others
bring the layers too. A suite's own policies are the highest layer: they
win collisions with the chosen ones. With none of these flags, the suites
get only the built-in tool classes.

Formats (--format):
  text   one line per passing suite; for each failing step a table of the
         checked fields (field, expected, actual; an x marks the ones that
         differ) and under it the rules the evaluator tried and what came of
         each; the last line is the count "N passed, M failed".
  json   one JSON document: {"suites": [...], "passed": N, "failed": M},
         each suite with its cases, each failing case with "mismatches"
         (step, expected, actual decision with its trace), and with
         --coverage a "coverage" object. The field names are stable
         (docs/authoring.md describes them).
  junit  JUnit XML for CI test reporters: one testsuite per suite file, one
         testcase per case (classname is the suite's name), a failure
         element with the differing fields, and the expected and actual
         decisions in system-out.

--coverage reports, per policy, how many of its rules the cases made fire
(decided a step, or rewrote a call on the way) and which never fired: a
table after the text report, a "coverage" object in JSON, a table on stderr
with junit. --coverage-min N fails the run when fewer than N percent of all
rules fired and names the policies below N.

Exit codes: 0 when every case passes (and coverage is at least
--coverage-min), 1 when a case fails or coverage is below --coverage-min,
2 when a path cannot be read, the flags are wrong or a suite is malformed
(a suite's problems are reported at their file:line:col with a code, as a
policy file's are: unknown_field for a misspelt key, and so on; celguard
lint reports them too).`,
		Example: `  # Run the suites next to your policies
  celguard test policies/

  # Only the cases whose "suite/case" name matches
  celguard test --run 'loop-detection/.*turn' policies/

  # The same suites against the set in force here (every layer)
  celguard test --effective policies/

  # Which rules do the tests never exercise? Fail below 80%
  celguard test --coverage --coverage-min 80 policies/

  # JUnit XML for the CI's test report
  celguard test --format junit policies/ > celguard-junit.xml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p.paths = args
			if !cmd.Flags().Changed("coverage-min") {
				p.coverageMin = -1
			} else if p.coverageMin < 0 {
				fmt.Fprintf(p.stderr, "celguard test: --coverage-min is a percentage from 0 to 100, not %g\n", p.coverageMin)
				return status(exitUsage)
			}
			return status(runTest(cmd.Context(), p))
		},
	}
	p.policies.addFlags(cmd.Flags())
	p.policies.addEffectiveFlag(cmd.Flags())
	cmd.Flags().StringVar(&p.run, "run", "", `run only the cases whose "suite/case" name matches this regular expression`)
	cmd.Flags().StringVar(&p.format, "format", "text", "output format: text, json or junit")
	cmd.Flags().BoolVar(&p.coverage, "coverage", false, "report which rules the cases made fire, per policy")
	cmd.Flags().Float64Var(&p.coverageMin, "coverage-min", 0, "fail (exit 1) when fewer than this percent of the rules fired; implies --coverage")
	return cmd
}

func runTest(ctx context.Context, p testParams) int {
	switch p.format {
	case "text", "json", "junit":
	default:
		fmt.Fprintf(p.stderr, "celguard test: --format must be text, json or junit, not %q\n", p.format)
		return exitUsage
	}
	if p.coverageMin > 100 {
		fmt.Fprintf(p.stderr, "celguard test: --coverage-min is a percentage from 0 to 100, not %g\n", p.coverageMin)
		return exitUsage
	}
	if p.coverageMin >= 0 {
		p.coverage = true
	}
	rep, err := p.report(ctx)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard test: %v\n", err)
		return exitUsage
	}
	var cov *policytest.Coverage
	if p.coverage {
		c := rep.Coverage()
		cov = &c
	}
	if err := p.write(rep, cov); err != nil {
		fmt.Fprintf(p.stderr, "celguard test: cannot write the report: %v\n", err)
		return exitUsage
	}
	code := exitOK
	if met := p.coverageMet(cov); !rep.OK() || !met {
		code = exitFindings
	}
	if rep.Malformed() {
		// A malformed suite is malformed input, whatever the others did.
		fmt.Fprintln(p.stderr, "celguard test: a suite is malformed (exit 2): fix the problems at their positions above")
		return exitUsage
	}
	return code
}

// report runs the suites p names (the built-in ones without a path).
func (p testParams) report(ctx context.Context) (*policytest.Report, error) {
	extra, err := p.policies.sources(classesOnly)
	if err != nil {
		return nil, err
	}
	// The suite's policies are the ones under test: above every layer.
	opts := policytest.Options{Extra: extra, Layer: policy.LayerRegistered}
	if p.run != "" {
		re, err := regexp.Compile(p.run)
		if err != nil {
			return nil, fmt.Errorf("--run: %w", err)
		}
		opts.Run = re
	}
	rep := &policytest.Report{}
	if len(p.paths) == 0 {
		r, err := policytest.RunFS(ctx, policies.FS(), ".", opts)
		if err != nil {
			return nil, fmt.Errorf("built-in suites: %w", err)
		}
		merge(rep, r, "builtin")
	}
	for _, arg := range p.paths {
		r, err := testPath(ctx, arg, opts)
		if err != nil {
			return nil, err
		}
		merge(rep, r, "")
	}
	if len(rep.Suites) == 0 {
		return nil, fmt.Errorf("no *_test.yaml suites in %s", strings.Join(p.paths, ", "))
	}
	if zeroDurations {
		for i := range rep.Suites {
			for j := range rep.Suites[i].Cases {
				rep.Suites[i].Cases[j].Duration = 0
			}
		}
	}
	return rep, nil
}

// write prints the report, and the coverage when asked, in --format.
func (p testParams) write(rep *policytest.Report, cov *policytest.Coverage) error {
	switch p.format {
	case "json":
		return output.TestJSON(p.stdout, rep, cov, currentBuild().Version)
	case "junit":
		err := output.JUnit(p.stdout, rep)
		if err == nil && cov != nil {
			err = output.CoverageText(p.stderr, *cov)
		}
		return err
	}
	err := output.TestText(p.stdout, rep)
	if err == nil && cov != nil {
		err = output.CoverageText(p.stdout, *cov)
	}
	return err
}

// coverageMet reports whether cov meets --coverage-min, and says on
// stderr which policies fall short when it does not.
func (p testParams) coverageMet(cov *policytest.Coverage) bool {
	if cov == nil || p.coverageMin < 0 || cov.Percent >= p.coverageMin {
		return true
	}
	fmt.Fprintf(p.stderr, "celguard test: coverage %.1f%% is below --coverage-min %g\n", cov.Percent, p.coverageMin)
	for _, pc := range cov.Below(p.coverageMin) {
		fmt.Fprintf(p.stderr, "  %s (%s) %.1f%%, never fired: %s\n", pc.Policy, pc.File, pc.Percent, strings.Join(pc.NeverFired, ", "))
	}
	return false
}

// testPath runs one suite file or every suite below a directory.
func testPath(ctx context.Context, arg string, opts policytest.Options) (*policytest.Report, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		r, err := policytest.RunFS(ctx, os.DirFS(arg), ".", opts)
		if err != nil {
			return nil, err
		}
		prefix(r, filepath.ToSlash(arg))
		return r, nil
	}
	if !policy.IsTestFile(arg) {
		return nil, fmt.Errorf("%s is not a test suite: suites are named *_test.yaml", arg)
	}
	dir, file := filepath.Split(arg)
	if dir == "" {
		dir = "."
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		return nil, err
	}
	r := &policytest.Report{}
	s, err := policytest.ParseSuite(file, data)
	if err != nil {
		r.Suites = append(r.Suites, policytest.Malformed(file, err))
		r.Failed++
	} else {
		sr := policytest.RunSuite(ctx, os.DirFS(dir), s, opts)
		r.Suites = append(r.Suites, sr)
		for _, c := range sr.Cases {
			if c.Pass {
				r.Passed++
			} else {
				r.Failed++
			}
		}
		if sr.Error != "" {
			r.Failed++
		}
	}
	prefix(r, filepath.ToSlash(dir))
	return r, nil
}

// prefix makes suite file names relative to the working directory again.
func prefix(r *policytest.Report, dir string) {
	for i := range r.Suites {
		full := path.Join(dir, r.Suites[i].File)
		// A suite's own errors (ParseSuite's) start with its file name.
		if rest, ok := strings.CutPrefix(r.Suites[i].Error, r.Suites[i].File+":"); ok {
			r.Suites[i].Error = full + ":" + rest
		}
		if ds := r.Suites[i].Diagnostics; len(ds) > 0 {
			ds = slices.Clone(ds)
			for j := range ds {
				if ds[j].Pos.File == r.Suites[i].File {
					ds[j].Pos.File = full
				}
			}
			r.Suites[i].Diagnostics = ds
			r.Suites[i].Error = ds.Error()
		}
		r.Suites[i].File = full
		for j := range r.Suites[i].Rules {
			r.Suites[i].Rules[j].File = path.Join(dir, r.Suites[i].Rules[j].File)
		}
	}
}

func merge(into, r *policytest.Report, dir string) {
	if dir != "" {
		prefix(r, dir)
	}
	into.Suites = append(into.Suites, r.Suites...)
	into.Passed += r.Passed
	into.Failed += r.Failed
}
