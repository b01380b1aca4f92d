package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// codeUntrustedIgnored is the code of the warning compile gives for each
// Overrides file, policy or rule of an untrusted project that it ignores
// (docs/layers.md, rule 3).
const codeUntrustedIgnored = policy.CodeUntrustedIgnored

// layerWarnings are what eval and hook say on stderr about the layers, each
// once: a trust store that could not be read (the project is untrusted) and
// every untrusted_ignored warning of set.
func layerWarnings(d *policies.Discovery, set *compile.PolicySet) []string {
	var out []string
	if d != nil && d.Project != nil && d.Project.StoreErr != nil {
		out = append(out, fmt.Sprintf("%v; the project's policies in %s are untrusted (they can only make decisions stricter)", d.Project.StoreErr, d.Project.Dir))
	}
	if set != nil {
		for _, w := range set.Warnings() {
			if w.Code == codeUntrustedIgnored {
				out = append(out, w.Error())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// printWarnings writes each warning on a line of w, after the command's
// name.
func printWarnings(w io.Writer, command string, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", command, m)
	}
}

// trustState says whether the project layer is trusted, and if not why and
// how to trust it.
func trustState(p *policies.Project) string {
	if p.Trusted {
		return "trusted on " + p.Entry.TrustedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("untrusted: %s; it can only make decisions stricter until you run `%s`", p.Reason, trustCommand(p.Root))
}

// writeLayers writes what each layer contributes: files read, policies and
// rules in force, and for the project layer whether it is trusted.
func writeLayers(w io.Writer, d *policies.Discovery, set *compile.PolicySet) {
	files := map[policy.Layer]int{}
	for _, s := range d.Sources {
		files[s.Layer]++
	}
	pols, rules := map[policy.Layer]int{}, map[policy.Layer]int{}
	for _, p := range set.Policies() {
		pols[p.Layer]++
	}
	for _, r := range set.Rules() {
		rules[r.Policy.Layer]++
	}
	fmt.Fprintln(w, "\nLayers:")
	for l := policy.LayerAdmin; ; l-- {
		if files[l] > 0 {
			line := fmt.Sprintf("  %-10s %s, %s, %s", l, plural(files[l], "file"), plural(pols[l], "policy"), plural(rules[l], "rule"))
			switch {
			case l == policy.LayerProject && d.Project != nil:
				line += fmt.Sprintf(" (%s): %s", d.Project.Dir, trustState(d.Project))
			case l == policy.LayerAdmin:
				line += fmt.Sprintf(" (%s)", d.AdminDir)
			}
			fmt.Fprintln(w, line)
		}
		if l == policy.LayerBuiltin {
			break
		}
	}
}

// plural writes n and the noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
