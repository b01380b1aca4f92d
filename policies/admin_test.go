//go:build unix

package policies_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

const adminPolicy = "apiVersion: celguard.dev/v1\nkind: Policy\nname: site\nrules: []\n"

// adminTree makes top/etc/celguard with a policy in it and in a
// subdirectory, every directory 0755 and file 0644, owned by the user
// running the test, and points the admin layer at it, owned by that user.
func adminTree(t *testing.T) (top, dir string) {
	top = t.TempDir()
	dir = filepath.Join(top, "etc", "celguard")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(top, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site.yaml"), []byte(adminPolicy), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "more.yaml"), []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: more\nrules: []\n"), 0o644))
	policies.SetAdminForTest(t, dir, top, uint32(os.Getuid()))
	return top, dir
}

func discoverAdmin(t *testing.T) (*policies.Discovery, error) {
	t.Helper()
	return policies.DiscoverLayers(policies.Options{Bundle: "none", UserDir: "-", ProjectDir: "-"})
}

func TestAdminDirIsFixed(t *testing.T) {
	assert.Equal(t, "/etc/celguard", policies.AdminDir)
}

func TestAdminLayerAccepted(t *testing.T) {
	top, dir := adminTree(t)
	// Files the loader does not read are not its business.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), nil, 0o666))
	require.NoError(t, os.Chmod(filepath.Join(dir, "README.md"), 0o666))
	d, err := discoverAdmin(t)
	require.NoError(t, err)
	assert.Equal(t, dir, d.AdminDir)
	got := map[string]policy.Layer{}
	for _, s := range d.Sources {
		got[s.Name] = s.Layer
	}
	assert.Equal(t, map[string]policy.Layer{
		"builtin/tool-classes.yaml":              policy.LayerBuiltin,
		filepath.ToSlash(dir) + "/site.yaml":     policy.LayerAdmin,
		filepath.ToSlash(dir) + "/sub/more.yaml": policy.LayerAdmin,
	}, got)

	// Through a symbolic link to a safe directory.
	link := filepath.Join(top, "etc", "link")
	require.NoError(t, os.Symlink(dir, link))
	policies.SetAdminForTest(t, link, top, uint32(os.Getuid()))
	d, err = discoverAdmin(t)
	require.NoError(t, err)
	assert.Equal(t, link, d.AdminDir)
	assert.Len(t, d.Sources, 3)
}

func TestNoAdminDirNoAdminLayer(t *testing.T) {
	top := t.TempDir()
	policies.SetAdminForTest(t, filepath.Join(top, "etc", "celguard"), top, uint32(os.Getuid()))
	d, err := discoverAdmin(t)
	require.NoError(t, err)
	assert.Empty(t, d.AdminDir)
	assert.Len(t, d.Sources, 1, "only the tool classes")
}

func TestAdminLayerRefused(t *testing.T) {
	chmod := func(rel string, mode os.FileMode) func(t *testing.T, top, dir string) string {
		return func(t *testing.T, top, dir string) string {
			p := filepath.Join(dir, rel)
			require.NoError(t, os.Chmod(p, mode))
			return p
		}
	}
	for name, tc := range map[string]struct {
		setup func(t *testing.T, top, dir string) (culprit string)
		why   string
	}{
		"dir writable by group":     {chmod(".", 0o775), "writable by group or others (mode 0775)"},
		"dir writable by others":    {chmod(".", 0o757), "writable by group or others (mode 0757)"},
		"file writable by group":    {chmod("site.yaml", 0o664), "writable by group or others (mode 0664)"},
		"file writable by others":   {chmod("site.yaml", 0o646), "writable by group or others (mode 0646)"},
		"subdir writable":           {chmod("sub", 0o777), "writable by group or others (mode 0777)"},
		"file in a subdir writable": {chmod("sub/more.yaml", 0o666), "writable by group or others (mode 0666)"},
		"parent writable":           {chmod("..", 0o777), "writable by group or others (mode 0777)"},
		"grandparent writable":      {chmod("../..", 0o777), "writable by group or others (mode 0777)"},
		"owned by another user": {func(t *testing.T, top, dir string) string {
			policies.SetAdminForTest(t, dir, top, uint32(os.Getuid())+1)
			return filepath.Join(dir, "..") // the first directory checked, going up
		}, "owned by uid"},
		"a symlinked file": {func(t *testing.T, top, dir string) string {
			target := filepath.Join(top, "elsewhere.yaml")
			require.NoError(t, os.WriteFile(target, []byte(adminPolicy), 0o644))
			p := filepath.Join(dir, "link.yaml")
			require.NoError(t, os.Symlink(target, p))
			return p
		}, "a symbolic link"},
		"a link to a dir under a writable one": {func(t *testing.T, top, dir string) string {
			open := filepath.Join(top, "open")
			require.NoError(t, os.MkdirAll(filepath.Join(open, "celguard"), 0o755))
			require.NoError(t, os.Chmod(open, 0o777))
			link := filepath.Join(top, "etc", "link")
			require.NoError(t, os.Symlink(filepath.Join(open, "celguard"), link))
			policies.SetAdminForTest(t, link, top, uint32(os.Getuid()))
			return open
		}, "writable by group or others"},
		"not a directory": {func(t *testing.T, top, dir string) string {
			f := filepath.Join(top, "etc", "file")
			require.NoError(t, os.WriteFile(f, []byte(adminPolicy), 0o644))
			policies.SetAdminForTest(t, f, top, uint32(os.Getuid()))
			return f
		}, "not a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			top, dir := adminTree(t)
			culprit := tc.setup(t, top, dir)
			_, err := discoverAdmin(t)
			require.Error(t, err)
			var d policy.Diagnostic
			require.True(t, errors.As(err, &d), "a diagnostic: %v", err)
			assert.Equal(t, policy.CodeAdminLayerUnsafe, d.Code)
			assert.Equal(t, policy.SeverityError, d.Severity)
			assert.Equal(t, filepath.Clean(culprit), d.Pos.File)
			assert.Contains(t, d.Message, tc.why)
			assert.Contains(t, err.Error(), "admin_layer_unsafe")
		})
	}
}
