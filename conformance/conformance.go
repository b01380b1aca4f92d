// Package conformance holds celguard's data-driven semantics suite: YAML
// cases, each with inline policies, a sequence of steps and the decision
// expected at each step, in the policytest format. The cases pin down what
// the engine means (priority and ties, first match, every verdict in each
// phase, modify continuation, counters, windows, approvals, failure
// policies, defaults, and how layers combine: mandatory rules, layer-major
// order, untrusted projects, in cases/layers_*; docs/layers.md) independently
// of how it is built. An inline policy may give its layer and trust
// ({layer, untrusted, text}; docs/authoring.md).
package conformance

import "embed"

// Cases is the suite: one YAML file per area under cases/.
//
//go:embed cases
var Cases embed.FS
