package policytest

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// BuiltinPrefix starts a suite's policies entry that names built-in
// policies instead of a path: builtin:recommended (a bundle: recommended,
// minimal, all or none) or builtin:loop-detection (one built-in policy).
const BuiltinPrefix = "builtin:"

// builtinName returns the name of a builtin:NAME entry.
func builtinName(entry string) (string, bool) { return strings.CutPrefix(entry, BuiltinPrefix) }

// checkBuiltins reports the first builtin:NAME entry that names neither a
// bundle nor a built-in policy, at its position (unknown_builtin).
func checkBuiltins(refs PolicyRefs) error {
	for i, e := range refs.Paths {
		name, ok := builtinName(e)
		if !ok {
			continue
		}
		if _, isBundle := policies.Bundles()[name]; isBundle || slices.Contains(policies.Names(), name) {
			continue
		}
		bundles := slices.Sorted(maps.Keys(policies.Bundles()))
		return policy.Diagnostic{Code: policy.CodeUnknownBuiltin, Severity: policy.SeverityError, Pos: refs.Pos[i],
			Message: fmt.Sprintf("%q names no built-in bundle (%s) and no built-in policy (%s)",
				e, strings.Join(bundles, ", "), strings.Join(policies.Names(), ", "))}
	}
	return nil
}

// builtinSources returns the sources of a builtin:NAME entry, in the
// built-in layer, with the built-in tool classes.
func builtinSources(name string) ([]policy.Source, error) {
	o := policies.Options{Bundle: name, UserDir: "-", ProjectDir: "-"}
	if _, isBundle := policies.Bundles()[name]; !isBundle {
		o.Bundle, o.Include = "none", []string{name}
	}
	return policies.Discover(o)
}

// dedupe drops every source identical to an earlier one (name, layer and
// content): a suite naming a bundle that the runner's extra sources hold
// too, or two bundles sharing policies, and the tool classes each brings.
func dedupe(srcs []policy.Source) []policy.Source {
	var out []policy.Source
	for _, s := range srcs {
		if !slices.ContainsFunc(out, func(o policy.Source) bool {
			return o.Name == s.Name && o.Layer == s.Layer && o.Untrusted == s.Untrusted && bytes.Equal(o.Data, s.Data)
		}) {
			out = append(out, s)
		}
	}
	return out
}
