package policies_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

const dockerGuard = "id: block-docker\ntool: Bash\npatterns:\n  - match: \"docker\"\n    verdict: ask\n    reason: \"Docker commands require approval\"\n"

// A project that ships BitCode guards and no .celguard/ is a project layer:
// untrusted until trusted, its guard files in the digest, editing one
// untrusting it again.
func TestProjectGuardsAreAnUntrustedLayer(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, ".bitcode", "guards", "block-docker.yaml"), dockerGuard)
	write(t, filepath.Join(repo, ".agents", "guards", "notes.md"), "---\nid: block-docker\npatterns:\n  - match: \"x\"\n    verdict: deny\n---\n")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))

	d := discover(t, repo)
	require.NotNil(t, d.Project)
	assert.False(t, d.Project.Trusted)
	var names []string
	for _, f := range d.Project.Files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"../.agents/guards/notes.md", "../.bitcode/guards/block-docker.yaml"}, names)
	var guard *policy.Source
	for i, s := range d.Sources {
		if strings.HasSuffix(s.Name, "block-docker.yaml") {
			guard = &d.Sources[i]
		}
		assert.False(t, strings.HasSuffix(s.Name, "notes.md"), "the .agents guard of the same id is replaced by the .bitcode one")
	}
	require.NotNil(t, guard)
	assert.True(t, guard.Untrusted)
	assert.Equal(t, policy.LayerProject, guard.Layer)

	// It compiles, its rule at the pattern's line in the guard file.
	set, err := compile.Compile(d.Sources)
	require.NoError(t, err)
	r, ok := set.Rule("guard-block-docker-1")
	require.True(t, ok)
	assert.Equal(t, 4, r.Pos.Line)
	assert.True(t, strings.HasSuffix(r.Pos.File, ".bitcode/guards/block-docker.yaml"), r.Pos.File)

	trustNow(t, d)
	assert.True(t, discover(t, repo).Project.Trusted)
	write(t, filepath.Join(repo, ".bitcode", "guards", "block-docker.yaml"), strings.Replace(dockerGuard, "ask", "allow", 1))
	d = discover(t, repo)
	assert.False(t, d.Project.Trusted, "an edited guard untrusts the project")
	assert.Contains(t, d.Project.Reason, "block-docker.yaml")
}

// The user's guards (HomeDir) are part of the user layer; a broken guard is
// an error at its position, as a broken policy file is.
func TestHomeGuards(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".claude", "guards", "no-curl.yaml"), "patterns:\n  - match: curl\n    verdict: deny\n")
	d, err := policies.DiscoverLayers(policies.Options{Bundle: "none", UserDir: "-", ProjectDir: "-", HomeDir: home})
	require.NoError(t, err)
	var found bool
	for _, s := range d.Sources {
		if strings.HasSuffix(s.Name, ".claude/guards/no-curl.yaml") {
			found = true
			assert.Equal(t, policy.LayerUser, s.Layer)
			assert.False(t, s.Untrusted)
		}
	}
	assert.True(t, found)

	write(t, filepath.Join(home, ".bitcode", "guards", "bad.yaml"), "patterns:\n  - match: \"(\"\n    verdict: deny\n")
	_, err = policies.DiscoverLayers(policies.Options{Bundle: "none", UserDir: "-", ProjectDir: "-", HomeDir: home})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.ToSlash(filepath.Join(home, ".bitcode", "guards", "bad.yaml"))+":2:12: import_invalid")

	// Without HomeDir, a UserDir named on the command line reads no home guards.
	_, err = policies.DiscoverLayers(policies.Options{Bundle: "none", UserDir: t.TempDir(), ProjectDir: "-"})
	require.NoError(t, err)
}

// Guard files and directories named explicitly are read natively.
func TestExplicitGuards(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, ".bitcode", "guards")
	write(t, filepath.Join(g, "block-docker.yaml"), dockerGuard)
	for _, p := range []string{g, filepath.Join(g, "block-docker.yaml")} {
		d, err := policies.Select(policies.Options{Explicit: []string{p}})
		require.NoError(t, err)
		_, err = compile.Compile(d.Sources)
		require.NoError(t, err, p)
	}
	require.NoError(t, os.WriteFile(filepath.Join(g, "other.txt"), []byte("not a guard"), 0o644))
	d, err := policies.Select(policies.Options{Explicit: []string{g}})
	require.NoError(t, err)
	assert.Len(t, d.Sources, 2, "the guard and the tool classes; other.txt is not read")
}
