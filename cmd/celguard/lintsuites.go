package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// splitSuites separates the *_test.yaml files named among paths from the
// other paths (policy files and directories).
func splitSuites(paths []string) (others, suites []string) {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && policy.IsTestFile(p) {
			suites = append(suites, p)
			continue
		}
		others = append(others, p)
	}
	return others, suites
}

// suiteSources reads the test suites at or below paths, as celguard test
// finds them: the files named, and every *_test.yaml below a directory
// except under directories whose names start with ".".
func suiteSources(paths []string) ([]policy.Source, error) {
	var out []policy.Source
	add := func(name string) error {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		out = append(out, policy.Source{Name: filepath.ToSlash(name), Data: data})
		return nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if policy.IsTestFile(p) {
				if err := add(p); err != nil {
					return nil, err
				}
			}
			continue
		}
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && f != p && strings.HasPrefix(d.Name(), "."):
				return fs.SkipDir
			case !d.IsDir() && policy.IsTestFile(f):
				return add(f)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lintSuite checks one suite as celguard test would read it: its format
// (ParseSuite's positioned problems), and that each path its policies list
// names exists (no_policies at the entry).
func lintSuite(src policy.Source) policy.Diagnostics {
	s, err := policytest.ParseSuite(src.Name, src.Data)
	if err != nil {
		var ds policy.Diagnostics
		if errors.As(err, &ds) {
			return ds
		}
		return policy.Diagnostics{{Code: policy.CodeInvalidValue, Severity: policy.SeverityError,
			Pos: policy.Pos{File: src.Name, Line: 1, Col: 1}, Message: err.Error()}}
	}
	var ds policy.Diagnostics
	dir := path.Dir(src.Name)
	for i, entry := range s.Policies.Paths {
		if strings.HasPrefix(entry, policytest.BuiltinPrefix) {
			continue // ParseSuite checked it
		}
		target := filepath.FromSlash(path.Join(dir, entry))
		if _, err := os.Stat(target); err != nil {
			ds = append(ds, policy.Diagnostic{Code: policy.CodeNoPolicies, Severity: policy.SeverityError, Pos: s.Policies.Pos[i],
				Message: fmt.Sprintf("policies entry %q names nothing: %s does not exist (entries are relative to the suite's directory)", entry, filepath.ToSlash(target))})
		}
	}
	return ds
}
