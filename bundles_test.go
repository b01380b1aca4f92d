package celguard_test

import (
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/bundle"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// TestBundleConfigs: bundles join only when the layers are read, never
// beside a program's own Sources nor with explicit files alone; a bundle
// given directly is the user's unless it says admin.
func TestBundleConfigs(t *testing.T) {
	b := bundle.LayerConfig{Name: "acme", Source: "https://example.com/acme.tar.gz", Keys: []string{"k.pub"}}
	none := []string{}
	for _, tc := range []struct {
		name string
		cfg  celguard.Config
		want int
	}{
		{"layers", celguard.Config{BundleFiles: none, Bundles: []bundle.LayerConfig{b}}, 1},
		{"explicit with layers", celguard.Config{BundleFiles: none, Bundles: []bundle.LayerConfig{b}, Policies: policies.Options{Explicit: []string{"x.yaml"}, Layers: true}}, 1},
		{"explicit alone", celguard.Config{BundleFiles: none, Bundles: []bundle.LayerConfig{b}, Policies: policies.Options{Explicit: []string{"x.yaml"}}}, 0},
		{"sources", celguard.Config{BundleFiles: none, Bundles: []bundle.LayerConfig{b}, Sources: func() ([]policy.Source, error) { return nil, nil }}, 0},
	} {
		bcs, err := tc.cfg.BundleConfigs()
		if err != nil || len(bcs) != tc.want {
			t.Errorf("%s: %d bundles, %v; want %d", tc.name, len(bcs), err, tc.want)
			continue
		}
		if tc.want == 1 && (bcs[0].Layer != "user" || bcs[0].PolicyLayer() != policy.LayerUser) {
			t.Errorf("%s: layer %q", tc.name, bcs[0].Layer)
		}
	}
	bad := b
	bad.Layer = "project"
	if _, err := (celguard.Config{BundleFiles: none, Bundles: []bundle.LayerConfig{bad}}).BundleConfigs(); err == nil {
		t.Error("a bundle for the project layer was accepted")
	}
}
