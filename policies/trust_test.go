package policies_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/trust"
)

const teamPolicy = "apiVersion: celguard.dev/v1\nkind: Policy\nname: team\nrules: []\n"

// project makes a repository with a .celguard/ and a scratch configuration
// directory, and returns the repository.
func project(t *testing.T) (repo string) {
	tmp := t.TempDir()
	repo = filepath.Join(tmp, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, ".celguard", "team.yaml"), teamPolicy)
	write(t, filepath.Join(repo, ".celguard", "sub", "off.yaml"), "apiVersion: celguard.dev/v1\nkind: Overrides\nname: off\ndisable: {policies: [x]}\n")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	return repo
}

func discover(t *testing.T, work string) *policies.Discovery {
	t.Helper()
	d, err := policies.DiscoverLayers(policies.Options{Bundle: "none", UserDir: "-", WorkDir: work})
	require.NoError(t, err)
	return d
}

// trustNow records the project as discover sees it, as celguard trust does.
func trustNow(t *testing.T, d *policies.Discovery) {
	t.Helper()
	path, err := trust.DefaultPath()
	require.NoError(t, err)
	s, err := trust.Load(path)
	require.NoError(t, err)
	s.Set(trust.Entry{Root: d.Project.Root, Digest: d.Project.Digest, Files: d.Project.Files, TrustedAt: time.Now()})
	require.NoError(t, s.Save())
}

func untrusted(d *policies.Discovery) map[string]bool {
	out := map[string]bool{}
	for _, s := range d.Sources {
		out[filepath.Base(s.Name)] = s.Untrusted
	}
	return out
}

func TestProjectIsUntrustedUntilTrusted(t *testing.T) {
	repo := project(t)
	d := discover(t, filepath.Join(repo, "src"))
	require.NotNil(t, d.Project)
	assert.False(t, d.Project.Trusted)
	assert.Equal(t, "not in the trust store", d.Project.Reason)
	assert.NoError(t, d.Project.StoreErr)
	assert.Equal(t, map[string]bool{"tool-classes.yaml": false, "team.yaml": true, "off.yaml": true}, untrusted(d))
	names := []string{}
	for _, f := range d.Project.Files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"sub/off.yaml", "team.yaml"}, names, "every file the loader reads, named relative to .celguard/")

	trustNow(t, d)
	d = discover(t, repo)
	assert.True(t, d.Project.Trusted)
	assert.Equal(t, map[string]bool{"tool-classes.yaml": false, "team.yaml": false, "off.yaml": false}, untrusted(d))
}

func TestChangingTheProjectUntrustsIt(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, dir string){
		"policy edited": func(t *testing.T, dir string) { write(t, filepath.Join(dir, "team.yaml"), teamPolicy+"# edited\n") },
		"file added":    func(t *testing.T, dir string) { write(t, filepath.Join(dir, "more.yml"), teamPolicy) },
		"file removed":  func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "sub", "off.yaml"))) },
		"file renamed": func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "team.yaml"), filepath.Join(dir, "team2.yaml")))
		},
		"file in a subdir": func(t *testing.T, dir string) { write(t, filepath.Join(dir, "sub", "off.yaml"), "x: y\n") },
	} {
		t.Run(name, func(t *testing.T) {
			repo := project(t)
			trustNow(t, discover(t, repo))
			change(t, filepath.Join(repo, ".celguard"))
			d := discover(t, repo)
			require.NotNil(t, d.Project)
			assert.False(t, d.Project.Trusted)
			assert.Contains(t, d.Project.Reason, "files changed since it was trusted")
			for _, s := range d.Sources {
				if s.Layer == policy.LayerProject {
					assert.True(t, s.Untrusted, s.Name)
				}
			}
		})
	}
}

// Files the loader does not read decide nothing, so they are not part of
// what is trusted: test suites (celguard test runs them; eval and hook
// never do), files starting with _ or ., testdata.
func TestFilesTheLoaderSkipsDoNotUntrust(t *testing.T) {
	repo := project(t)
	trustNow(t, discover(t, repo))
	dir := filepath.Join(repo, ".celguard")
	write(t, filepath.Join(dir, "team_test.yaml"), "cases: []\n")
	write(t, filepath.Join(dir, "_draft.yaml"), "x: y\n")
	write(t, filepath.Join(dir, "README.md"), "notes\n")
	write(t, filepath.Join(dir, "testdata", "x.yaml"), "x: y\n")
	write(t, filepath.Join(dir, ".hidden", "x.yaml"), "x: y\n")
	assert.True(t, discover(t, repo).Project.Trusted)
}

func TestTrustIsBoundToTheRoot(t *testing.T) {
	repo := project(t)
	d := discover(t, repo)
	trustNow(t, d)

	// The same content in another repository is not trusted.
	other := filepath.Join(filepath.Dir(repo), "other")
	write(t, filepath.Join(other, ".git", "HEAD"), "x")
	for _, f := range []string{"team.yaml", "sub/off.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, ".celguard", f))
		require.NoError(t, err)
		write(t, filepath.Join(other, ".celguard", f), string(b))
	}
	od := discover(t, other)
	assert.Equal(t, d.Project.Digest, od.Project.Digest)
	assert.False(t, od.Project.Trusted)

	// The same repository through a symbolic link is.
	link := filepath.Join(filepath.Dir(repo), "link")
	require.NoError(t, os.Symlink(repo, link))
	ld := discover(t, filepath.Join(link, "src"))
	assert.Equal(t, d.Project.Root, ld.Project.Root)
	assert.True(t, ld.Project.Trusted)

	root, err := policies.ProjectRoot(filepath.Join(link, "a", "b"))
	require.NoError(t, err)
	assert.Equal(t, d.Project.Root, root)
}

func TestAnUnreadableTrustStoreTrustsNothing(t *testing.T) {
	repo := project(t)
	trustNow(t, discover(t, repo))
	path, err := trust.DefaultPath()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	d := discover(t, repo)
	require.NotNil(t, d.Project)
	assert.False(t, d.Project.Trusted)
	require.Error(t, d.Project.StoreErr)
	assert.Contains(t, d.Project.StoreErr.Error(), path)
	assert.Contains(t, d.Project.Reason, path)
	assert.True(t, untrusted(d)["team.yaml"])

	d, err = policies.DiscoverLayers(policies.Options{Bundle: "none", UserDir: "-", WorkDir: repo, TrustFile: "-"})
	require.NoError(t, err)
	assert.False(t, d.Project.Trusted)
}

func TestNoProjectFilesNoProject(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	write(t, filepath.Join(tmp, "repo", ".celguard", "README.md"), "nothing to load\n")
	// A malformed store is not even read when there is no project layer.
	write(t, filepath.Join(tmp, "config", "celguard", "trust.json"), "{")
	d := discover(t, filepath.Join(tmp, "repo"))
	assert.Nil(t, d.Project)
}
