package policy

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Layer is where a policy file comes from. Higher layers win: their rules
// are tried first, a policy of the same name in a higher layer replaces the
// lower one, a rule id defined in two layers is kept from the higher, and an
// Overrides file disables policies and rules of lower layers only. Mandatory
// rules and untrusted projects are the exceptions (docs/layers.md).
type Layer uint8

// Layers, lowest first.
const (
	LayerBuiltin    Layer = iota // embedded in celguard
	LayerUser                    // the user's directory (~/.config/celguard)
	LayerProject                 // the project's .celguard/ directory
	LayerExplicit                // named on the command line (--policy)
	LayerRegistered              // added by the embedding program
	LayerAdmin                   // the machine's administrator (/etc/celguard, root-owned); rules mandatory by default
)

var layerNames = [...]string{"builtin", "user", "project", "explicit", "registered", "admin"}

// String returns the layer's name.
func (l Layer) String() string {
	if int(l) < len(layerNames) {
		return layerNames[l]
	}
	return fmt.Sprintf("layer(%d)", l)
}

// MarshalText implements encoding.TextMarshaler.
func (l Layer) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// ParseLayer parses a layer's name: builtin, user, project, explicit,
// registered or admin.
func ParseLayer(s string) (Layer, error) {
	for i, n := range layerNames {
		if n == s {
			return Layer(i), nil
		}
	}
	return LayerBuiltin, fmt.Errorf("layer must be one of builtin, user, project, explicit, registered, admin, not %q", s)
}

// KindOverrides is the kind of a file that disables lower-layer policies or
// rules by name.
const KindOverrides = "Overrides"

// Overrides is one parsed Overrides file.
type Overrides struct {
	File            string
	Pos             Pos
	Name            String
	DisablePolicies []String
	DisableRules    []String
}

func (d *decoder) overrides(n *yaml.Node) *Overrides {
	o := &Overrides{File: d.file, Pos: d.pos(n)}
	if d.fields(n, "the overrides file", map[string]func(k, v *yaml.Node){
		"apiVersion":  func(_, v *yaml.Node) { d.apiVersion(v) },
		"kind":        func(_, v *yaml.Node) {},
		"name":        func(_, v *yaml.Node) { o.Name = d.id(v, "name") },
		"description": func(_, v *yaml.Node) { d.text(v, "description") },
		"disable": func(_, v *yaml.Node) {
			d.fields(v, "disable", map[string]func(k, v *yaml.Node){
				"policies": func(_, v *yaml.Node) {
					for _, c := range d.list(v, "disable.policies") {
						o.DisablePolicies = append(o.DisablePolicies, d.id(c, "policy name"))
					}
				},
				"rules": func(_, v *yaml.Node) {
					for _, c := range d.list(v, "disable.rules") {
						o.DisableRules = append(o.DisableRules, d.id(c, "rule id"))
					}
				},
			})
		},
	}) {
		d.require(n, "the overrides file", "apiVersion", "kind", "name", "disable")
	}
	return o
}
