package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/policy"
)

func TestParseConfig(t *testing.T) {
	good := `{"bundles": [{"name": "acme", "source": "oci://registry.example.com/acme/policies:stable", "keys": ["k.pub"], "mandatory": true, "on_refused": "block", "interval": "10m"}]}`
	cs, err := ParseConfig([]byte(good), "admin", "/etc/celguard/bundles.json")
	if err != nil || len(cs) != 1 || cs[0].Layer != "admin" || cs[0].PolicyLayer() != policy.LayerAdmin || cs[0].path("k.pub") != "/etc/celguard/k.pub" {
		t.Fatalf("ParseConfig = %+v, %v", cs, err)
	}
	for name, in := range map[string]string{
		"unknown field":  `{"bundles": [{"name": "acme", "source": "https://x/y", "keys": ["k"], "extra": 1}]}`,
		"bad name":       `{"bundles": [{"name": "Acme!", "source": "https://x/y", "keys": ["k"]}]}`,
		"twice":          `{"bundles": [{"name": "a", "source": "https://x/y", "keys": ["k"]}, {"name": "a", "source": "https://x/y", "keys": ["k"]}]}`,
		"no keys":        `{"bundles": [{"name": "a", "source": "https://x/y"}]}`,
		"no source":      `{"bundles": [{"name": "a", "keys": ["k"]}]}`,
		"plain http url": `{"bundles": [{"name": "a", "source": "http://x/y", "keys": ["k"]}]}`,
		"remote plain":   `{"bundles": [{"name": "a", "source": "oci://registry.example.com/a:b", "plain_http": true, "keys": ["k"]}]}`,
		"threshold":      `{"bundles": [{"name": "a", "source": "https://x/y", "keys": ["k"], "threshold": 2}]}`,
		"on_refused":     `{"bundles": [{"name": "a", "source": "https://x/y", "keys": ["k"], "on_refused": "allow"}]}`,
		"interval":       `{"bundles": [{"name": "a", "source": "https://x/y", "keys": ["k"], "interval": "1ms"}]}`,
	} {
		if _, err := ParseConfig([]byte(in), "user", "bundles.json"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDecide: what a configured bundle contributes to its layer, from a
// user bundles file, with and without mandatory.
func TestDecide(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	priv, pub := keyPair(t)
	pubFile := filepath.Join(dir, "keys", "team.pub")
	os.MkdirAll(filepath.Dir(pubFile), 0o755)
	if err := os.WriteFile(pubFile, pemOf(t, pub), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, FileName)
	os.WriteFile(conf, []byte(`{"bundles": [
	  {"name": "team", "source": "https://example.com/team.tar.gz", "keys": ["keys/team.pub"], "state_dir": "state"},
	  {"name": "must", "source": "https://example.com/must.tar.gz", "keys": ["keys/team.pub"], "state_dir": "state", "mandatory": true},
	  {"name": "nokey", "source": "https://example.com/n.tar.gz", "keys": ["keys/missing.pub"], "state_dir": "state", "mandatory": true}]}`), 0o644)
	cs, err := LoadConfig(conf, filepath.Join(dir, "missing.json"))
	if err != nil || len(cs) != 3 {
		t.Fatalf("LoadConfig = %+v, %v", cs, err)
	}
	// Nothing pulled yet: the optional bundle adds nothing, the mandatory
	// one blocks, a missing key blocks the mandatory one.
	if d, err := cs[0].Decide(ctx); err == nil || d.Blocked || len(d.Sources) != 0 {
		t.Errorf("optional, none yet: %+v, %v", d, err)
	}
	if d, err := cs[1].Decide(ctx); err == nil || !d.Blocked {
		t.Errorf("mandatory, none yet: %+v, %v", d, err)
	}
	if d, err := cs[2].Decide(ctx); CodeOf(err) != CodeKey || !d.Blocked {
		t.Errorf("mandatory, missing key: %+v, %v", d, err)
	}
	st, err := cs[0].Store()
	if err != nil {
		t.Fatal(err)
	}
	if st.Dir != filepath.Join(dir, "state") || st.Layer != "user" {
		t.Errorf("store = %+v", st)
	}
	b, err := Build(ctx, "testdata/team", BuildOptions{Name: "team", Version: "v7", Serial: 7, Layer: "user", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, staticSource{b.Archive, envJSON(t, must(Sign(ctx, b, nil, priv)))}); err != nil {
		t.Fatal(err)
	}
	d, err := cs[0].Decide(ctx)
	if err != nil || d.Blocked || d.Ref == nil || d.Ref.Serial != 7 || len(d.Sources) != 1 ||
		d.Sources[0].Name != "bundle:team@v7/serial-7/no-rm.yaml" || d.Sources[0].Layer != policy.LayerUser || d.Sources[0].Bundle != "team@v7/serial-7" {
		t.Errorf("in force: %+v, %v", d, err)
	}
	if !strings.Contains(string(d.Sources[0].Data), "no-rm-root-or-home") {
		t.Error("the sources are not the bundle's")
	}
}
