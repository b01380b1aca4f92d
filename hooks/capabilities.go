package hooks

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// Support is how exactly a host honours a verdict in a phase.
type Support string

// Supports, from the real-host suite's observations.
const (
	// SupportExact: the host does what the verdict says.
	SupportExact Support = "exact"
	// SupportDegraded: the host does something stricter or coarser
	// (Capability.Becomes says what): an ask becomes a deny, a redaction
	// reaches the model as a tool error.
	SupportDegraded Support = "degraded"
	// SupportNone: the verdict has no effect there (the host sends no
	// such event, or does not honour the answer).
	SupportNone Support = "none"
)

// Capability is what one host does with one verdict in one phase, as the
// real-host suite (hooks/hostse2e) observed it driving the host against a
// fake model server.
type Capability struct {
	// Phase is the rule's phase (before, after, output), or "failure" for
	// what the host does when celguard cannot decide.
	Phase string `json:"phase"`
	// Verdict is the rule's verdict (allow, block, ask, modify), or for
	// the failure phase what failed (policy, binary).
	Verdict string  `json:"verdict"`
	Support Support `json:"support"`
	// Becomes is what a degraded or unsupported verdict becomes.
	Becomes string `json:"becomes,omitempty"`
	// Observed is what the suite saw, in words.
	Observed string `json:"observed"`
}

// HostCapabilities is one host's row of the matrix.
type HostCapabilities struct {
	Host string `json:"host"`
	// Version is the host version the suite ran ("" for a row that was
	// not run).
	Version string `json:"version"`
	// Source is how the row was made: "" when the real-host suite ran the
	// host, SourceDocumented when it could not.
	Source       string       `json:"source,omitempty"`
	Capabilities []Capability `json:"capabilities"`
}

// SourceDocumented marks a row that is documented, not run: the host
// cannot be installed where the suite runs (Cursor's CLI is downloaded
// from its vendor, not a package registry), so the suite drives celguard's
// installed hook with the events of the host's published hook
// documentation, and each cell says what that documentation says the host
// does with celguard's answer. Never a measurement of the host itself.
const SourceDocumented = "documented"

// CapabilityMatrix is the host capability matrix: per host and version,
// which verdicts and phases it honours exactly and which degrade, to what.
type CapabilityMatrix struct {
	// Generated says how the matrix was made.
	Generated string             `json:"generated"`
	Hosts     []HostCapabilities `json:"hosts"`
}

//go:embed capabilities.json
var capabilitiesJSON []byte

// matrix is the shipped matrix, decoded on first use (not at package
// init: every hook process links this package).
var matrix = sync.OnceValue(func() CapabilityMatrix {
	var m CapabilityMatrix
	if err := json.Unmarshal(capabilitiesJSON, &m); err != nil {
		panic("hooks: capabilities.json: " + err.Error())
	}
	return m
})

// Capabilities returns the capability matrix shipped with celguard
// (capabilities.json, written by `go test ./hooks/hostse2e -update` and
// checked by every run of the suite). The caller may change it.
func Capabilities() CapabilityMatrix {
	var m CapabilityMatrix
	_ = json.Unmarshal(capabilitiesJSON, &m)
	return m
}

// CapabilitiesJSON is the matrix as shipped, for a caller that writes it
// back.
func CapabilitiesJSON() []byte { return slices.Clone(capabilitiesJSON) }

// HostCapability returns what host does with verdict in phase, the
// version it was observed at (for a row documented, not run, "documented,
// not run"), and whether the matrix says.
func HostCapability(host, phase, verdict string) (Capability, string, bool) {
	for _, h := range matrix().Hosts {
		if h.Host != host {
			continue
		}
		version := h.Version
		if h.Source == SourceDocumented {
			version = "(documented, not run)"
		}
		for _, c := range h.Capabilities {
			if c.Phase == phase && c.Verdict == verdict {
				return c, version, true
			}
		}
		return Capability{}, version, false
	}
	return Capability{}, "", false
}

// DegradedRules warns, at each rule's file:line, of the rules whose
// verdict degrades, or has no effect, on one of hosts (names from the host
// table), per the capability matrix: an ask on Codex is a deny, a
// redaction on Gemini CLI reaches the model as a tool error, an output
// rule never runs on a host that sends no model output; on a host whose
// row is documented, not run (Cursor), the warning says so. Code
// host_degrades (docs/diagnostics.md).
func DegradedRules(set *compile.PolicySet, hosts []string) (policy.Diagnostics, error) {
	for _, h := range hosts {
		if _, err := LookupHost(h); err != nil {
			return nil, err
		}
	}
	var ds policy.Diagnostics
	for _, r := range set.Rules() {
		if r.Pos.File == "" || strings.HasPrefix(r.Pos.File, "builtin/") {
			continue
		}
		for _, h := range hosts {
			c, version, ok := HostCapability(h, r.Phase.String(), r.Verdict.String())
			if !ok || c.Support == SupportExact {
				continue
			}
			info, _ := LookupHost(h)
			what := "degrades"
			if c.Support == SupportNone {
				what = "has no effect"
			}
			ds = append(ds, policy.Diagnostic{Code: policy.CodeHostDegrades, Severity: policy.SeverityWarning, Pos: r.Pos,
				Message: fmt.Sprintf("rule %s: %s in the %s phase %s on %s %s: it becomes %s (celguard hosts shows every host)",
					r.ID, r.Verdict, r.Phase, what, info.Title, version, c.Becomes)})
		}
	}
	for _, p := range set.Policies() {
		if p.Source != nil {
			ds.Suppress(p.Source.Suppressions) // # celguard:ignore host_degrades
		}
	}
	ds.Sort()
	return ds, nil
}
