package policy_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
)

func TestIsPolicyFile(t *testing.T) {
	tests := []struct {
		name       string
		wantPolicy bool
		wantTest   bool
	}{
		{"a.yaml", true, false},
		{"a.yml", true, false},
		{"dir/sub/a.yaml", true, false},
		{`dir\sub\a.yaml`, true, false},
		{"a_test.yaml", false, true},
		{"a_test.yml", false, true},
		{"dir/a_test.yaml", false, true},
		{"_draft.yaml", false, false},
		{".hidden.yaml", false, false},
		{"a.json", false, false},
		{"a.yaml.bak", false, false},
		{"a.YAML", false, false},
		{"yaml", false, false},
		{"test.yaml", true, false},
		{"a-test.yaml", true, false},
		{"_x_test.yaml", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantPolicy, policy.IsPolicyFile(tt.name), "IsPolicyFile(%q)", tt.name)
			assert.Equal(t, tt.wantTest, policy.IsTestFile(tt.name), "IsTestFile(%q)", tt.name)
		})
	}
}

func names(srcs []policy.Source) []string {
	out := make([]string, len(srcs))
	for i, s := range srcs {
		out[i] = s.Name
	}
	return out
}

func TestLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"z.yaml":                   {Data: []byte("z")},
		"a.yml":                    {Data: []byte("a")},
		"b/c.yaml":                 {Data: []byte("c")},
		"b/a.yaml":                 {Data: []byte("ba")},
		"b/c_test.yaml":            {Data: []byte("test")},
		"b/_draft.yaml":            {Data: []byte("draft")},
		"b/.hidden.yaml":           {Data: []byte("hidden")},
		"b/notes.md":               {Data: []byte("notes")},
		"testdata/x.yaml":          {Data: []byte("testdata")},
		"b/testdata/y.yaml":        {Data: []byte("testdata")},
		"_private/p.yaml":          {Data: []byte("private")},
		".git/config.yaml":         {Data: []byte("git")},
		"b-c/d.yaml":               {Data: []byte("bc")},
		"root/testdata/keep.yaml":  {Data: []byte("keep")},
		"root/inner/testdata.yaml": {Data: []byte("file named testdata")},
	}
	srcs, err := policy.LoadFS(fsys, ".", "")
	require.NoError(t, err)
	// Sorted by name (byte order: "-" < "/"), test suites, _ and . files and
	// directories and testdata directories skipped.
	assert.Equal(t, []string{"a.yml", "b-c/d.yaml", "b/a.yaml", "b/c.yaml", "root/inner/testdata.yaml", "z.yaml"}, names(srcs))
	assert.Equal(t, "ba", string(srcs[2].Data))

	// A root that is itself named testdata, or that starts with _, is walked.
	srcs, err = policy.LoadFS(fsys, "root/testdata", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"root/testdata/keep.yaml"}, names(srcs))
	srcs, err = policy.LoadFS(fsys, "_private", "pre")
	require.NoError(t, err)
	assert.Equal(t, []string{"pre/_private/p.yaml"}, names(srcs), "the prefix is joined to the path")

	_, err = policy.LoadFS(fsys, "missing", "")
	assert.Error(t, err)
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	write("set/b.yaml", "b")
	write("set/a.yaml", "a")
	write("set/a_test.yaml", "suite")
	write("set/testdata/t.yaml", "t")
	write("set/_skip.yaml", "skip")
	explicit := write("other/_explicit.yaml", "explicit")
	suite := write("other/s_test.yaml", "suite")

	srcs, err := policy.LoadPaths(explicit, filepath.Join(dir, "set"))
	require.NoError(t, err)
	set := filepath.ToSlash(filepath.Join(dir, "set"))
	// The order of the paths is kept; a directory's files are sorted; a file
	// named explicitly is read even when a walk would skip it.
	assert.Equal(t, []string{filepath.ToSlash(explicit), set + "/a.yaml", set + "/b.yaml"}, names(srcs))
	assert.Equal(t, "explicit", string(srcs[0].Data))

	_, err = policy.LoadPaths(suite)
	assert.ErrorContains(t, err, "test suite", "a test suite named explicitly is refused")
	_, err = policy.LoadPaths(filepath.Join(dir, "nope.yaml"))
	assert.Error(t, err)

	big := write("big.yaml", string(make([]byte, policy.MaxFileSize+1)))
	_, err = policy.LoadPaths(big)
	assert.ErrorContains(t, err, "limited")

	srcs, err = policy.LoadPaths()
	require.NoError(t, err)
	assert.Empty(t, srcs)
}
