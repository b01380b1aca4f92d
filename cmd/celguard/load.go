package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/pflag"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// selection is how every command that reads policies (eval, hook, lint,
// test, policies list --effective) chooses them: --policy paths, and the
// layers under them. One selection, one set of flags (addFlags), one way to
// the sources (sources).
type selection struct {
	paths            []string
	bundle           string
	include, exclude []string
	// userDir and projectDir replace the user's and the project's policy
	// directories ("-": none); empty means where they are found by default.
	userDir, projectDir string
	// effective asks lint and test for the layers as eval and hook read
	// them (--effective); eval and hook always read them.
	effective bool
}

// addFlags declares --policy, --bundle, --include, --exclude, --user-dir
// and --project-dir.
func (s *selection) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&s.paths, "policy", "p", nil, "policy file or directory (repeatable); alone, only these decide")
	fs.StringVar(&s.bundle, "bundle", "", "built-in bundle under the other layers: recommended (the default when the layers are read), minimal, all or none")
	fs.StringSliceVar(&s.include, "include", nil, "built-in policy to add to the bundle (repeatable)")
	fs.StringSliceVar(&s.exclude, "exclude", nil, "built-in policy to leave out of the bundle (repeatable)")
	fs.StringVar(&s.userDir, "user-dir", "", `the user's policy directory instead of $XDG_CONFIG_HOME/celguard ("-": none); reads the layers`)
	fs.StringVar(&s.projectDir, "project-dir", "", `the project's policy directory instead of .celguard/ at the repository root ("-": none); reads the layers`)
}

// addEffectiveFlag declares --effective, for the commands (lint, test) that
// read only the files they are given unless asked for the layers.
func (s *selection) addEffectiveFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&s.effective, "effective", false, "read the layers as eval and hook do here (the built-in bundle, the user's and the project's policies), with the paths on top")
}

// args are the flags that choose s, as a command line would give them
// (hook install writes them into the installed command).
func (s selection) args() []string {
	var out []string
	for _, p := range s.paths {
		out = append(out, "--policy", p)
	}
	if s.bundle != "" {
		out = append(out, "--bundle", s.bundle)
	}
	for _, n := range s.include {
		out = append(out, "--include", n)
	}
	for _, n := range s.exclude {
		out = append(out, "--exclude", n)
	}
	if s.userDir != "" {
		out = append(out, "--user-dir", s.userDir)
	}
	if s.projectDir != "" {
		out = append(out, "--project-dir", s.projectDir)
	}
	return out
}

// layerFlags reports whether --bundle, --include, --exclude, --user-dir,
// --project-dir or --effective was given: they ask for the layers even
// beside --policy.
func (s selection) layerFlags() bool {
	return s.bundle != "" || len(s.include) > 0 || len(s.exclude) > 0 || s.userDir != "" || s.projectDir != "" || s.effective
}

// empty reports whether nothing was chosen.
func (s selection) empty() bool { return len(s.paths) == 0 && !s.layerFlags() }

// unchosen says what an empty selection means to a command. It is the one
// place where the commands' policy selection differs.
type unchosen bool

const (
	// everyLayer: with nothing chosen, every layer decides (the
	// recommended built-in bundle, the user's and the project's policies).
	// eval, hook and policies list --effective decide calls as an agent's
	// would be decided here.
	everyLayer unchosen = true
	// classesOnly: with nothing chosen, only the built-in tool classes.
	// lint and test check the files they are given (policy files, test
	// suites with their own policies); the layers come in only when a flag
	// asks for them, so that a check does not depend on the user's
	// directories.
	classesOnly unchosen = false
)

// sources returns the policy sources s names: with --policy alone, those
// files (the explicit layer) and the built-in tool classes; with a flag of
// the layers (layerFlags), every layer with the --policy files on top; with
// nothing chosen, what whenEmpty says.
func (s selection) sources(whenEmpty unchosen) ([]policy.Source, error) {
	d, err := s.discover(whenEmpty)
	if err != nil {
		return nil, err
	}
	return d.Sources, nil
}

// discover is sources with what was found of the project layer and its
// trust, and of the admin layer, when the layers were read (the Discovery
// has only Sources otherwise). Past the one case of an empty selection
// that only lint and test have (classesOnly), it is celguard.Config's
// Select (policies.Select and the policy bundles in force): the code path
// package celguard's Load takes, so an embedder decides as the command
// line does.
func (s selection) discover(whenEmpty unchosen) (*policies.Discovery, error) {
	if s.empty() && whenEmpty == classesOnly {
		return &policies.Discovery{Sources: []policy.Source{policies.ToolClasses()}}, nil
	}
	// Config.Select is policies.Select with the policy bundles in force
	// (docs/bundles.md) in their layers, as eval, hook and serve load them.
	d, err := celguard.Config{Policies: s.options()}.Select()
	if err != nil {
		return nil, describe(err)
	}
	return d, nil
}

// options are the policies.Options of s.
func (s selection) options() policies.Options {
	return policies.Options{Bundle: s.bundle, Include: s.include, Exclude: s.exclude,
		UserDir: s.userDir, ProjectDir: s.projectDir, Explicit: s.paths, Layers: s.effective}
}

// layeredSet compiles the sources s names (see sources) with opts, and
// returns them with what was found of the layers (nil when the sources
// could not be read). The error is compile.Compile's, policy.Diagnostics
// when the policies do not compile, or discover's.
func (s selection) layeredSet(whenEmpty unchosen, opts ...compile.Option) (*policies.Discovery, *compile.PolicySet, error) {
	d, err := s.discover(whenEmpty)
	if err != nil {
		return nil, nil, err
	}
	set, err := compile.Compile(d.Sources, opts...)
	return d, set, err
}

// engineConfig is the composition root's Config of a command that decides
// the calls of an agent on this machine (eval, hook, serve): the policies
// sel chooses (every layer when nothing is chosen), path.abs resolving
// symbolic links on the host's file system (at most 40 per path, so a
// link inside the workspace that points at ~/.ssh or .celguard/ is judged
// by where it points: issue 15, point 4), the user's and the
// administrator's judges, asks deferred to the caller (the host asks its
// user), every decision with its audit record, and the decision log and
// monitor mode d asks for. Each command adds what is its own (the hook its
// AST cache and approval requests, serve its store) and calls Load.
func engineConfig(sel selection, d decisionOptions) (celguard.Config, error) {
	cfg := celguard.Config{Policies: sel.options(), HostFS: true, Approver: celguard.DeferAsks, DecisionMetadata: !noDecisionAudit}
	return cfg, d.configure(&cfg)
}

// describe rewrites file errors as "path: problem".
func describe(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
