package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// loadSources reads the policy files at paths; with no paths, the built-in
// policies.
func loadSources(paths []string) ([]policy.Source, error) {
	if len(paths) == 0 {
		srcs, err := policies.Sources()
		if err != nil {
			return nil, fmt.Errorf("cannot read the built-in policies: %w", err)
		}
		return srcs, nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, describe(err)
		}
	}
	srcs, err := policy.LoadPaths(paths...)
	if err != nil {
		return nil, describe(err)
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no policy files in %s (policy files are *.yaml and *.yml, not *_test.yaml)", quoteList(paths))
	}
	return srcs, nil
}

// describe rewrites file errors as "path: problem".
func describe(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

func quoteList(paths []string) string {
	s := ""
	for i, p := range paths {
		switch {
		case i == 0:
		case i == len(paths)-1:
			s += " or "
		default:
			s += ", "
		}
		s += p
	}
	return s
}
