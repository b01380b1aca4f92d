package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// policiesParams is what `celguard policies` was asked to do.
type policiesParams struct {
	name      string    // show: the policy to print
	effective bool      // list: the set in force instead of the built-ins
	sel       selection // list --effective: which policies
	stdio
}

func newPoliciesCmd(sio stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "List and print the built-in policies",
		Long: `Policies lists the policies built into celguard (the ones eval uses when no
--policy is given) and prints their YAML, to read or to copy as a start for
your own.

Exit codes: 0 on success, 2 for an unknown policy name or bad arguments.`,
		Example: `  celguard policies list
  celguard policies show loop-detection > policies/loop-detection.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var lp policiesParams
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in policies, or with --effective the set in force and where each policy comes from",
		Long: `List prints one line per built-in policy: its name, its file, how many
rules it has and the first sentence of its description.

With --effective it lists the policy set eval would use here instead: every
layer (the built-in bundle, the user's and the project's policies, --policy
files, the administrator's /etc/celguard), each policy with its layer and
file; then what each layer contributes (files, policies, rules) and whether
the project's .celguard/ is trusted (celguard trust) and if not why; then
what layering left out (a policy replaced by a higher layer's of the same
name, a rule redefined, anything an Overrides file disabled) and why; then
the warnings (what an untrusted project may not do, overrides that disable
nothing, a trust store that cannot be read). --policy, --bundle, --include
and --exclude choose the set as they do for eval, hook, lint and test.

Exit codes: 0 on success, 2 when the policies cannot be read or compiled.`,
		Example: `  celguard policies list
  celguard policies list --effective
  celguard policies list --effective --bundle minimal --include risky-commands`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lp.stdio = sio
			if lp.effective {
				return status(runPoliciesEffective(cmd.Context(), lp))
			}
			return status(runPoliciesList(cmd.Context(), lp))
		},
	}
	list.Flags().BoolVar(&lp.effective, "effective", false, "list the set in force here, with each policy's layer and origin")
	lp.sel.addFlags(list.Flags())
	cmd.AddCommand(list, &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in policy's YAML",
		Long: `Show prints the YAML of the built-in policy NAME, as shipped. NAME is the
policy's name or its file name.

Exit codes: 0 on success, 2 for an unknown name.`,
		Example: `  celguard policies show loop-detection`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name one policy to show (celguard policies list shows the names)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(runPoliciesShow(cmd.Context(), policiesParams{name: args[0], stdio: sio}))
		},
	})
	return cmd
}

// builtinSet compiles the built-in policies.
func builtinSet() ([]policy.Source, *compile.PolicySet, error) {
	srcs, err := policies.Sources()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the built-in policies: %w", err)
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		return nil, nil, fmt.Errorf("the built-in policies do not compile: %w", err)
	}
	return srcs, set, nil
}

func runPoliciesList(_ context.Context, p policiesParams) int {
	_, set, err := builtinSet()
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard policies list: %v\n", err)
		return exitUsage
	}
	return writePolicyTable(p, set, "NAME\tFILE\tRULES\tDESCRIPTION", func(pol *compile.Policy, rules int) string {
		return fmt.Sprintf("%s\t%s\t%d\t%s", pol.Name, pol.File, rules, firstSentence(pol.Description))
	})
}

// writePolicyTable prints one row per policy of set, with its rule count,
// under header (tab-separated columns).
func writePolicyTable(p policiesParams, set *compile.PolicySet, header string, row func(pol *compile.Policy, rules int) string) int {
	counts := map[*compile.Policy]int{}
	for _, r := range set.Rules() {
		counts[r.Policy]++
	}
	tw := tabwriter.NewWriter(p.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, pol := range set.Policies() {
		fmt.Fprintln(tw, row(pol, counts[pol]))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(p.stderr, "celguard policies list: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// runPoliciesEffective lists the policy set in force with its origins:
// the policies, what each layer contributes and whether the project is
// trusted, what layering left out and the warnings about it.
func runPoliciesEffective(_ context.Context, p policiesParams) int {
	d, set, err := p.sel.layeredSet(everyLayer)
	if ds := (policy.Diagnostics)(nil); errors.As(err, &ds) {
		err = fmt.Errorf("the policies do not compile: %w", err)
	}
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard policies list: %v\n", err)
		return exitUsage
	}
	if code := writePolicyTable(p, set, "LAYER\tNAME\tFILE\tRULES", func(pol *compile.Policy, rules int) string {
		return fmt.Sprintf("%s\t%s\t%s\t%d", pol.Layer, pol.Name, pol.File, rules)
	}); code != exitOK {
		return code
	}
	writeLayers(p.stdout, d, set)
	if ex := set.Exclusions(); len(ex) > 0 {
		fmt.Fprintln(p.stdout, "\nLeft out:")
		for _, e := range ex {
			fmt.Fprintf(p.stdout, "  %s %s (%s, %s): %s\n", e.Kind, e.Name, e.Layer, e.Pos, e.Reason)
		}
	}
	var warnings []string
	if d.Project != nil && d.Project.StoreErr != nil {
		warnings = append(warnings, d.Project.StoreErr.Error())
	}
	for _, w := range set.Warnings() {
		if w.Severity == policy.SeverityWarning {
			warnings = append(warnings, w.Error())
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintln(p.stdout, "\nWarnings:")
		for _, w := range warnings {
			fmt.Fprintf(p.stdout, "  %s\n", w)
		}
	}
	return exitOK
}

func runPoliciesShow(_ context.Context, p policiesParams) int {
	srcs, set, err := builtinSet()
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard policies show: %v\n", err)
		return exitUsage
	}
	var names []string
	for _, pol := range set.Policies() {
		names = append(names, pol.Name)
		base := path.Base(pol.File)
		if p.name != pol.Name && p.name != base && p.name != strings.TrimSuffix(base, path.Ext(base)) {
			continue
		}
		for _, src := range srcs {
			if src.Name == pol.File {
				if _, err := p.stdout.Write(src.Data); err != nil {
					fmt.Fprintf(p.stderr, "celguard policies show: %v\n", err)
					return exitUsage
				}
				return exitOK
			}
		}
	}
	fmt.Fprintf(p.stderr, "celguard policies show: no built-in policy %q (the built-in policies are: %s)\n", p.name, strings.Join(names, ", "))
	return exitUsage
}

// firstSentence shortens a description to its first sentence, on one line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return s
}
