package compile_test

import (
	"slices"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// TestBundles: a set lists the distinct bundles its sources came from,
// sorted, and none when they are files on disk.
func TestBundles(t *testing.T) {
	pol := func(name, b string) policy.Source {
		return policy.Source{Name: name, Bundle: b, Layer: policy.LayerUser, Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: " + name + "\nrules:\n  - id: r-" + name + "\n    verdict: block\n    reason: r\n")}
	}
	set, err := compile.Compile([]policy.Source{policies.ToolClasses(), pol("b", "zeta@v1/serial-2"), pol("a", "acme@v3/serial-9"), pol("c", "acme@v3/serial-9"), pol("d", "")})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Bundles(); !slices.Equal(got, []string{"acme@v3/serial-9", "zeta@v1/serial-2"}) {
		t.Errorf("Bundles() = %v", got)
	}
	set, err = compile.Compile([]policy.Source{policies.ToolClasses(), pol("d", "")})
	if err != nil || set.Bundles() != nil {
		t.Errorf("no bundle: %v, %v", set.Bundles(), err)
	}
}
