package celguard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

const projectBlock = `apiVersion: celguard.dev/v1
kind: Policy
name: local
rules:
  - id: no-deploy
    match: {tools: [Bash]}
    condition: 'command.contains("make deploy")'
    verdict: block
`

// TestForWorkDirDecidesWithTheProjectOfTheCall: a per-project guard
// decides a call made in a repository with that repository's .celguard/,
// keeps one compiled set per project (bounded), and follows an edit of the
// project's policy when the caller expects its digest.
func TestForWorkDirDecidesWithTheProjectOfTheCall(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	base := t.TempDir()
	repo := func(name, pol string) string {
		dir := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		if pol != "" {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, ".celguard"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".celguard", "local.yaml"), []byte(pol), 0o644))
		}
		return dir
	}
	a, b, c := repo("a", projectBlock), repo("b", ""), repo("c", "")
	ctx := context.Background()
	g, err := celguard.Config{PerProject: true, MaxProjects: 1, JudgeFiles: []string{},
		Policies: policies.Options{Bundle: "none", WorkDir: c}}.Load(ctx)
	require.NoError(t, err)
	defer g.Close()
	deploy := eval.Call{Tool: "Bash", Args: map[string]any{"command": "make deploy"}}
	decide := func(dir string) (eval.Decision, *celguard.Guard) {
		pg, err := g.ForWorkDir(dir, "")
		require.NoError(t, err)
		d, err := pg.NewSession("s", nil).Before(ctx, deploy)
		require.NoError(t, err)
		return d, pg
	}

	d, pa := decide(filepath.Join(a, "sub"))
	assert.Equal(t, policy.Block, d.Verdict, "repository a's policy decides a call made under it")
	require.NotNil(t, pa.Discovery().Project)
	assert.False(t, pa.Discovery().Project.Trusted)
	d, pc := decide(c)
	assert.Equal(t, policy.Allow, d.Verdict)
	assert.Same(t, g, pc, "the guard's own project is the guard")
	for _, dir := range []string{"", "relative/dir", filepath.Join(base, "missing")} {
		pg, err := g.ForWorkDir(dir, "")
		require.NoError(t, err)
		assert.Same(t, g, pg, "%q: the guard's own project decides", dir)
	}
	d, _ = decide(b)
	assert.Equal(t, policy.Allow, d.Verdict)
	assert.Equal(t, []string{mustRoot(t, b)}, g.Projects(), "at most MaxProjects kept, the least recently used dropped")

	// An edit of a's policy: a caller that expects the new digest gets it.
	pa2, err := g.ForWorkDir(a, "")
	require.NoError(t, err)
	old := pa2.Digest()
	require.NoError(t, os.WriteFile(filepath.Join(a, ".celguard", "local.yaml"), []byte(projectBlock+"    reason: edited\n"), 0o644))
	want, err := celguard.Config{PerProject: true, JudgeFiles: []string{}, Policies: policies.Options{Bundle: "none"}}.SourcesDigest(ctx, a)
	require.NoError(t, err)
	assert.NotEqual(t, old, want)
	pa3, err := g.ForWorkDir(a, want)
	require.NoError(t, err)
	assert.Equal(t, want, pa3.Digest(), "the edited policy is in force at once")
}

func mustRoot(t *testing.T, dir string) string {
	t.Helper()
	r, err := policies.ProjectRoot(dir)
	require.NoError(t, err)
	return r
}

// TestSourcesManifestFollowsTheFiles: with Config.Manifests each read of
// the sources records what they were read from; a file dropped into the
// project's .celguard/ or an edited trust store makes it stale, a Reload
// records the new state, and a project reached through a symbolic link is
// its own project, named by that path.
func TestSourcesManifestFollowsTheFiles(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	base := t.TempDir()
	dir := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".celguard"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".celguard", "local.yaml"), []byte(projectBlock), 0o644))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(dir, link))
	cfg := celguard.Config{PerProject: true, Manifests: true, Policies: policies.Options{WorkDir: t.TempDir()}}
	g, err := cfg.Load(context.Background())
	require.NoError(t, err)
	defer g.Close()

	p, err := g.ForWorkDir(dir, "")
	require.NoError(t, err)
	m, digest := p.SourcesManifest()
	require.NotNil(t, m, "a manifest of the project's sources")
	assert.Equal(t, p.Digest(), digest)
	require.NoError(t, m.Check())

	require.NoError(t, os.WriteFile(filepath.Join(dir, ".celguard", "new.yaml"), []byte(projectBlock), 0o644))
	assert.Error(t, m.Check(), "a new file in .celguard/")
	_, err = p.Reload(false)
	require.Error(t, err, "a duplicate policy does not compile")
	broken, _ := p.SourcesManifest()
	assert.Nil(t, broken, "the set in force is not what is on disk: no manifest")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".celguard", "new.yaml"), []byte(strings.NewReplacer("name: local", "name: other", "id: no-deploy", "id: other").Replace(projectBlock)), 0o644))
	_, err = p.Reload(false)
	require.NoError(t, err)
	m2, _ := p.SourcesManifest()
	require.NotNil(t, m2)
	assert.NotSame(t, m, m2)
	require.NoError(t, m2.Check())

	trust := filepath.Join(home, ".config", "celguard", "trust.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(trust), 0o700))
	require.NoError(t, os.WriteFile(trust, []byte(`{"version":1,"projects":[]}`), 0o600))
	assert.Error(t, m2.Check(), "a trust store written")

	viaLink, err := g.ForWorkDir(filepath.Join(link), "")
	require.NoError(t, err)
	assert.NotSame(t, p, viaLink, "the linked path is its own project")
	src := viaLink.Discovery().Sources
	var names []string
	for _, s := range src {
		if s.Layer == policy.LayerProject {
			names = append(names, s.Name)
		}
	}
	assert.Contains(t, names, filepath.ToSlash(filepath.Join(link, ".celguard", "local.yaml")), "named by the path the hook names them by")
}
