package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/pflag"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// selection is how a command chooses its policies: --policy paths, and the
// layers under them.
type selection struct {
	paths            []string
	bundle           string
	include, exclude []string
}

// addFlags declares --policy, --bundle, --include and --exclude.
func (s *selection) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&s.paths, "policy", "p", nil, "policy file or directory (repeatable); alone, only these decide")
	fs.StringVar(&s.bundle, "bundle", "", "built-in bundle under the other layers: recommended, minimal, all or none (default recommended when no --policy is given)")
	fs.StringSliceVar(&s.include, "include", nil, "built-in policy to add to the bundle (repeatable)")
	fs.StringSliceVar(&s.exclude, "exclude", nil, "built-in policy to leave out of the bundle (repeatable)")
}

// layered reports whether the layers (built-in bundle, user and project
// directories) are read: always without --policy, and with it when a
// bundle, include or exclude is given.
func (s selection) layered() bool {
	return len(s.paths) == 0 || s.bundle != "" || len(s.include) > 0 || len(s.exclude) > 0
}

// sources returns the policy sources the selection names.
func (s selection) sources() ([]policy.Source, error) {
	if !s.layered() {
		return loadSources(s.paths)
	}
	for _, p := range s.paths {
		if _, err := os.Stat(p); err != nil {
			return nil, describe(err)
		}
	}
	srcs, err := policies.Discover(policies.Options{Bundle: s.bundle, Include: s.include, Exclude: s.exclude, Explicit: s.paths})
	if err != nil {
		return nil, describe(err)
	}
	return srcs, nil
}

// loadSources reads the policy files at paths, as the explicit layer; with
// no paths, every layer: the recommended built-in bundle, the user's and the
// project's policies.
func loadSources(paths []string) ([]policy.Source, error) {
	if len(paths) == 0 {
		srcs, err := policies.Discover(policies.Options{})
		if err != nil {
			return nil, fmt.Errorf("cannot read the policies: %w", err)
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
	for i := range srcs {
		srcs[i].Layer = policy.LayerExplicit
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no policy files in %s (policy files are *.yaml and *.yml, not *_test.yaml)", quoteList(paths))
	}
	// The built-in tool classes come with every set: rules may match on them.
	srcs = append(srcs, policies.ToolClasses())
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
