package celguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/bundle"
	"github.com/celguard/celguard/hooks/daemonwire"
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

// heldSource is a bundle source that serves one archive and envelope (or
// fails as unreachable when it has none).
type heldSource struct{ archive, envelope []byte }

func (s heldSource) Fetch(context.Context, string, bundle.Limits) (*bundle.Fetched, error) {
	if s.archive == nil {
		return nil, &bundle.Error{Code: bundle.CodeUnreachable, Msg: "nothing served"}
	}
	return &bundle.Fetched{Archive: s.archive, Envelope: s.envelope, Tag: "t"}, nil
}

func (heldSource) String() string { return "held" }

// signedBundle builds the policies of dir as bundle name at serial and
// signs it with key.
func signedBundle(t *testing.T, dir, name string, serial uint64, key *bundle.Key) heldSource {
	t.Helper()
	b, err := bundle.Build(context.Background(), dir, bundle.BuildOptions{Name: name, Version: fmt.Sprintf("v%d", serial), Serial: serial, Layer: "user"})
	require.NoError(t, err)
	env, err := bundle.Sign(context.Background(), b, nil, key)
	require.NoError(t, err)
	envJSON, err := json.Marshal(env)
	require.NoError(t, err)
	return heldSource{archive: b.Archive, envelope: envJSON}
}

// TestSourcesManifestFollowsTheBundle: with a signed bundle in force the
// sources' manifest covers what the bundle configuration consults (the
// bundles file, the key files, the store's file): another bundle put in
// force, an edited bundles file, a replaced key, or a pull that rewrote
// the store each make it stale; a Reload records the new state.
func TestSourcesManifestFollowsTheBundle(t *testing.T) {
	dir := t.TempDir()
	priv, pub, err := bundle.GenerateKey()
	require.NoError(t, err)
	key, err := bundle.ParseKey(priv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team.pub"), pub, 0o644))
	conf := filepath.Join(dir, "bundles.json")
	require.NoError(t, os.WriteFile(conf, []byte(`{"bundles":[{"name":"team","source":"https://127.0.0.1:1/team","keys":["team.pub"],"mandatory":true,"state_dir":"store"}]}`), 0o644))
	bcs, err := bundle.LoadConfig(conf)
	require.NoError(t, err)
	st, err := bcs[0].Store()
	require.NoError(t, err)
	_, err = st.Update(context.Background(), signedBundle(t, filepath.Join("bundle", "testdata", "team"), "team", 1, key))
	require.NoError(t, err)
	paths, err := bcs[0].Paths()
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "team.pub"), filepath.Join(dir, "store", "team.bundle.json")}, paths)

	cfg := celguard.Config{Manifests: true, BundleFiles: []string{conf}, JudgeFiles: []string{},
		Policies: policies.Options{WorkDir: t.TempDir(), UserDir: "-", ProjectDir: "-", TrustFile: "-"}}
	g, err := cfg.Load(context.Background())
	require.NoError(t, err)
	defer g.Close()
	require.Len(t, g.Bundles(context.Background()), 1)
	m, _ := g.SourcesManifest()
	require.NotNil(t, m, "a manifest with a bundle in force")
	require.NoError(t, m.Check())
	var roots []string
	for _, r := range m.Roots {
		roots = append(roots, r.Path)
	}
	assert.Subset(t, roots, append(paths, conf))

	reload := func() *daemonwire.Manifest {
		t.Helper()
		_, err := g.Reload(false)
		require.NoError(t, err)
		m, _ := g.SourcesManifest()
		require.NotNil(t, m)
		require.NoError(t, m.Check())
		return m
	}
	_, err = st.Update(context.Background(), signedBundle(t, filepath.Join("bundle", "testdata", "team"), "team", 2, key))
	require.NoError(t, err)
	assert.Error(t, m.Check(), "another bundle in force")
	m = reload()

	_, err = st.Update(context.Background(), heldSource{})
	require.Error(t, err)
	assert.Error(t, m.Check(), "a pull that failed rewrote the store's file")
	m = reload()

	require.NoError(t, os.WriteFile(conf, []byte(`{"bundles":[{"name":"team","source":"https://127.0.0.1:1/team","keys":["team.pub"],"state_dir":"store"}]}`), 0o644))
	assert.Error(t, m.Check(), "the bundles file edited")
	m = reload()

	_, pub2, err := bundle.GenerateKey()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team.pub"), pub2, 0o644))
	assert.Error(t, m.Check(), "the key replaced")
	reload()
	assert.Nil(t, g.Bundles(context.Background())[0].InForce, "no bundle verifies with the new key")
}
