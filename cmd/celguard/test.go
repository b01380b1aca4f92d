package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// testParams is what `celguard test` was asked to do.
type testParams struct {
	paths []string
	run   string
	stdio
}

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

A failing case prints each differing field, expected against actual. The
last line is the count: "N passed, M failed".

Exit codes: 0 when every case passes, 1 when any fails, 2 when a path cannot
be read or the flags are wrong.`,
		Example: `  # Run the suites next to your policies
  celguard test policies/

  # Only the cases whose "suite/case" name matches
  celguard test --run 'loop-detection/.*turn' policies/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p.paths = args
			return status(runTest(cmd.Context(), p))
		},
	}
	cmd.Flags().StringVar(&p.run, "run", "", `run only the cases whose "suite/case" name matches this regular expression`)
	return cmd
}

func runTest(ctx context.Context, p testParams) int {
	opts := policytest.Options{}
	if p.run != "" {
		re, err := regexp.Compile(p.run)
		if err != nil {
			fmt.Fprintf(p.stderr, "celguard test: --run: %v\n", err)
			return exitUsage
		}
		opts.Run = re
	}
	rep := &policytest.Report{}
	if len(p.paths) == 0 {
		r, err := policytest.RunFS(ctx, policies.FS(), ".", opts)
		if err != nil {
			fmt.Fprintf(p.stderr, "celguard test: built-in suites: %v\n", err)
			return exitUsage
		}
		merge(rep, r, "builtin")
	}
	for _, arg := range p.paths {
		r, err := testPath(ctx, arg, opts)
		if err != nil {
			fmt.Fprintf(p.stderr, "celguard test: %v\n", err)
			return exitUsage
		}
		merge(rep, r, "")
	}
	if len(rep.Suites) == 0 {
		fmt.Fprintf(p.stderr, "celguard test: no *_test.yaml suites in %s\n", strings.Join(p.paths, ", "))
		return exitUsage
	}
	writeTestText(p.stdout, rep)
	if !rep.OK() {
		return exitFindings
	}
	return exitOK
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
		r.Suites = append(r.Suites, policytest.SuiteResult{File: file, Name: file, Error: err.Error()})
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
		r.Suites[i].File = path.Join(dir, r.Suites[i].File)
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

// writeTestText prints failures in detail and passing suites in one line.
func writeTestText(w io.Writer, rep *policytest.Report) {
	for _, s := range rep.Suites {
		if s.Error != "" {
			fmt.Fprintf(w, "FAIL %s: %s\n", s.File, s.Error)
			continue
		}
		failed := 0
		for _, c := range s.Cases {
			if !c.Pass {
				failed++
			}
		}
		if failed == 0 {
			fmt.Fprintf(w, "ok   %s (%d cases)\n", s.File, len(s.Cases))
			continue
		}
		fmt.Fprintf(w, "FAIL %s (%d of %d cases failed)\n", s.File, failed, len(s.Cases))
		for _, c := range s.Cases {
			if c.Pass {
				continue
			}
			fmt.Fprintf(w, "  --- FAIL %s:%d: %s\n", s.File, c.Line, c.Name)
			for _, f := range c.Failures {
				fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(f, "\n", "\n      "))
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", rep.Passed, rep.Failed)
}
