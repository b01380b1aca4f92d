package policies_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
}

func names(srcs []policy.Source) map[string]policy.Layer {
	out := map[string]policy.Layer{}
	for _, s := range srcs {
		out[filepath.ToSlash(s.Name)] = s.Layer
	}
	return out
}

func TestEveryBundleNamesBuiltinPolicies(t *testing.T) {
	all := policies.Names()
	for b, ns := range policies.Bundles() {
		for _, n := range ns {
			assert.Contains(t, all, n, "bundle %s", b)
		}
	}
}

func TestDiscoverLayers(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	user := filepath.Join(tmp, "config", "celguard")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, ".celguard", "team.yaml"), "apiVersion: celguard.dev/v1\nkind: Policy\nname: team\nrules: []\n")
	write(t, filepath.Join(repo, ".celguard", "_draft.yaml"), "not: a policy\n")
	write(t, filepath.Join(repo, ".celguard", "team_test.yaml"), "cases: []\n")
	write(t, filepath.Join(user, "mine.yaml"), "apiVersion: celguard.dev/v1\nkind: Policy\nname: mine\nrules: []\n")
	write(t, filepath.Join(tmp, "extra.yaml"), "apiVersion: celguard.dev/v1\nkind: Policy\nname: extra\nrules: []\n")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))

	srcs, err := policies.Discover(policies.Options{
		Bundle:     "none",
		Include:    []string{"loop-detection"},
		WorkDir:    filepath.Join(repo, "src", "deep"),
		Explicit:   []string{filepath.Join(tmp, "extra.yaml")},
		Registered: []policy.Source{{Name: "registered.yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: reg\nrules: []\n")}},
	})
	require.NoError(t, err)
	got := names(srcs)
	want := map[string]policy.Layer{
		"builtin/tool-classes.yaml":                                     policy.LayerBuiltin,
		"builtin/loop-detection.yaml":                                   policy.LayerBuiltin,
		filepath.ToSlash(filepath.Join(user, "mine.yaml")):              policy.LayerUser,
		filepath.ToSlash(filepath.Join(repo, ".celguard", "team.yaml")): policy.LayerProject,
		filepath.ToSlash(filepath.Join(tmp, "extra.yaml")):              policy.LayerExplicit,
		"registered.yaml":                                               policy.LayerRegistered,
	}
	assert.Equal(t, want, got)
	_, err = compile.Compile(srcs)
	require.NoError(t, err)
}

func TestDiscoverDefaultsToTheRecommendedBundle(t *testing.T) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	require.NoError(t, err)
	got := names(srcs)
	assert.Contains(t, got, "builtin/tool-classes.yaml")
	for _, n := range policies.Bundles()[policies.BundleRecommended] {
		assert.Contains(t, got, "builtin/"+n+".yaml")
	}
	assert.NotContains(t, got, "builtin/mcp-arguments.yaml", "the example policy is not on by default")
}

func TestDiscoverRejectsUnknownNames(t *testing.T) {
	_, err := policies.Discover(policies.Options{Bundle: "everything", UserDir: "-", ProjectDir: "-"})
	assert.ErrorContains(t, err, `unknown bundle "everything"`)
	_, err = policies.Discover(policies.Options{Exclude: []string{"risky-command"}, UserDir: "-", ProjectDir: "-"})
	assert.ErrorContains(t, err, `no built-in policy "risky-command"`)
	_, err = policies.Discover(policies.Options{Explicit: []string{"/no/such/file.yaml"}, UserDir: "-", ProjectDir: "-"})
	assert.Error(t, err)
}

// TestSelect is the command line's choice of sources (policies.Select):
// explicit paths alone are those files and the built-in tool classes; any
// layer option, or none at all, reads every layer.
func TestSelect(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user directory there
	tmp := t.TempDir()
	team := filepath.Join(tmp, "team")
	write(t, filepath.Join(team, "team.yaml"), "apiVersion: celguard.dev/v1\nkind: Policy\nname: team\nrules:\n  - id: r\n    match: {classes: [shell]}\n    condition: 'command == \"x\"'\n    verdict: block\n    reason: r\n")
	reg := policy.Source{Name: "mine.yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: mine\nrules: []\n")}

	d, err := policies.Select(policies.Options{Explicit: []string{team}, Registered: []policy.Source{reg}})
	require.NoError(t, err)
	assert.Equal(t, map[string]policy.Layer{
		filepath.ToSlash(filepath.Join(team, "team.yaml")): policy.LayerExplicit,
		"mine.yaml":                 policy.LayerRegistered,
		"builtin/tool-classes.yaml": policy.LayerBuiltin,
	}, names(d.Sources))
	_, err = compile.Compile(d.Sources)
	require.NoError(t, err, "the tool classes let the rule match shell and read command")

	for _, o := range []policies.Options{
		{Explicit: []string{team}, Layers: true},
		{Explicit: []string{team}, Bundle: "minimal"},
		{Explicit: []string{team}, UserDir: "-"},
		{Explicit: []string{team}, ProjectDir: "-"},
		{Explicit: []string{team}, Exclude: []string{"rate-limit"}},
		{},
	} {
		o.TrustFile, o.WorkDir = "-", tmp
		d, err := policies.Select(o)
		require.NoError(t, err)
		assert.Contains(t, names(d.Sources), "builtin/dangerous-commands.yaml", "%+v reads the layers", o)
	}

	_, err = policies.Select(policies.Options{Explicit: []string{filepath.Join(tmp, "missing")}})
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = policies.Select(policies.Options{Explicit: []string{t.TempDir()}})
	assert.ErrorContains(t, err, "no policy files in")
}
