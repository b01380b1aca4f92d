package trust_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/trust"
)

func src(name, data string) policy.Source { return policy.Source{Name: name, Data: []byte(data)} }

func TestDigestIsBoundToNamesAndContents(t *testing.T) {
	base, files := trust.Digest([]policy.Source{src("a.yaml", "x"), src("b.yaml", "y")})
	require.Len(t, files, 2)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, base)
	assert.Equal(t, "a.yaml", files[0].Name)

	same, _ := trust.Digest([]policy.Source{src("b.yaml", "y"), src("a.yaml", "x")})
	assert.Equal(t, base, same, "the order of the sources does not matter")

	for name, srcs := range map[string][]policy.Source{
		"content changed":                   {src("a.yaml", "x"), src("b.yaml", "z")},
		"file renamed":                      {src("a.yaml", "x"), src("c.yaml", "y")},
		"file added":                        {src("a.yaml", "x"), src("b.yaml", "y"), src("c.yaml", "")},
		"file removed":                      {src("a.yaml", "x")},
		"bytes moved from content to name":  {src("a.yamlx", ""), src("b.yaml", "y")},
		"bytes moved between files":         {src("a.yaml", "xy"), src("b.yaml", "")},
		"two files joined into one content": {src("a.yaml", "x\x00\x00\x00\x00\x00\x00\x00\x06b.yaml\x00\x00\x00\x00\x00\x00\x00\x01y")},
	} {
		d, _ := trust.Digest(srcs)
		assert.NotEqual(t, base, d, name)
	}
	empty, files := trust.Digest(nil)
	assert.NotEqual(t, base, empty)
	assert.Empty(t, files)
}

func TestStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "celguard", trust.FileName)
	s, err := trust.Load(path)
	require.NoError(t, err, "a missing store is empty")
	assert.Empty(t, s.Entries)

	d, files := trust.Digest([]policy.Source{src("team.yaml", "x")})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Set(trust.Entry{Root: "/b", Digest: d, Files: files, TrustedAt: at})
	s.Set(trust.Entry{Root: "/a", Digest: d, Files: files, TrustedAt: at})
	s.Set(trust.Entry{Root: "/b", Digest: d, TrustedAt: at.Add(time.Hour)})
	require.NoError(t, s.Save())

	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	got, err := trust.Load(path)
	require.NoError(t, err)
	require.Len(t, got.Entries, 2)
	assert.Equal(t, "/a", got.Entries[0].Root)
	assert.Equal(t, at.Add(time.Hour), got.Entries[1].TrustedAt, "Set replaces the entry of the same root")

	assert.True(t, got.Check("/a", d, files).Trusted)
	st := got.Check("/c", d, files)
	assert.False(t, st.Trusted)
	assert.Equal(t, "not in the trust store", st.Reason)

	d2, files2 := trust.Digest([]policy.Source{src("team.yaml", "y"), src("off.yaml", "")})
	st = got.Check("/a", d2, files2)
	assert.False(t, st.Trusted)
	assert.Contains(t, st.Reason, "changed since it was trusted on 2026-01-02T03:04:05Z (changed team.yaml; added off.yaml)")

	assert.True(t, got.Remove("/a"))
	assert.False(t, got.Remove("/a"))
	require.NoError(t, got.Save())
	got, err = trust.Load(path)
	require.NoError(t, err)
	require.Len(t, got.Entries, 1)
}

func TestChanges(t *testing.T) {
	then := []trust.File{{Name: "a", SHA256: "1"}, {Name: "b", SHA256: "2"}, {Name: "c", SHA256: "3"}}
	now := []trust.File{{Name: "a", SHA256: "1"}, {Name: "b", SHA256: "9"}, {Name: "d", SHA256: "4"}}
	assert.Equal(t, "changed b; added d; removed c", trust.Changes(then, now))
	assert.Equal(t, "the digest differs", trust.Changes(then, then))
}

func TestLoadRefusesAStoreItCannotBelieve(t *testing.T) {
	good := `"sha256:` + strings.Repeat("0", 64) + `"`
	for name, body := range map[string]string{
		"not JSON":           `{"version": 1, "projects": [`,
		"unknown field":      `{"version": 1, "projects": [], "trust_everything": true}`,
		"other version":      `{"version": 2, "projects": []}`,
		"no version":         `{"projects": []}`,
		"relative root":      `{"version": 1, "projects": [{"root": "repo", "digest": ` + good + `}]}`,
		"unclean root":       `{"version": 1, "projects": [{"root": "/a/../b", "digest": ` + good + `}]}`,
		"bad digest":         `{"version": 1, "projects": [{"root": "/a", "digest": "sha256:zz"}]}`,
		"upper-case digest":  `{"version": 1, "projects": [{"root": "/a", "digest": "sha256:` + strings.Repeat("A", 64) + `"}]}`,
		"other algorithm":    `{"version": 1, "projects": [{"root": "/a", "digest": "md5:` + strings.Repeat("0", 32) + `"}]}`,
		"root twice":         `{"version": 1, "projects": [{"root": "/a", "digest": ` + good + `}, {"root": "/a", "digest": ` + good + `}]}`,
		"two JSON values":    `{"version": 1, "projects": []} {}`,
		"projects not array": `{"version": 1, "projects": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), trust.FileName)
			require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
			_, err := trust.Load(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "trust store "+path+": ", "the error names the file")
		})
	}
	t.Run("valid", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), trust.FileName)
		require.NoError(t, os.WriteFile(path, []byte(`{"version": 1, "projects": [{"root": "/a", "digest": `+good+`}]}`), 0o600))
		_, err := trust.Load(path)
		require.NoError(t, err)
	})
	if runtime.GOOS == "windows" {
		return
	}
	t.Run("writable by others", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), trust.FileName)
		require.NoError(t, os.WriteFile(path, []byte(`{"version": 1, "projects": []}`), 0o600))
		require.NoError(t, os.Chmod(path, 0o622))
		_, err := trust.Load(path)
		assert.ErrorContains(t, err, "writable by group or others")
	})
	t.Run("a directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), trust.FileName)
		require.NoError(t, os.Mkdir(path, 0o700))
		_, err := trust.Load(path)
		assert.ErrorContains(t, err, "not a regular file")
	})
}

func TestConfigDirAndRoot(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", tmp)
	dir, err := trust.ConfigDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, "celguard"), dir)
	p, err := trust.DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, "celguard", "trust.json"), p)

	t.Setenv("XDG_CONFIG_HOME", "relative")
	t.Setenv("HOME", tmp)
	dir, err = trust.ConfigDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, ".config", "celguard"), dir, "a relative XDG_CONFIG_HOME is ignored")

	if runtime.GOOS == "windows" {
		return
	}
	real := filepath.Join(tmp, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	require.NoError(t, os.Symlink(real, filepath.Join(tmp, "link")))
	want, err := filepath.EvalSymlinks(real)
	require.NoError(t, err)
	for _, p := range []string{real, filepath.Join(tmp, "link"), filepath.Join(tmp, "link", "..", "real") + "/"} {
		got, err := trust.Root(p)
		require.NoError(t, err)
		assert.Equal(t, want, got, p)
	}
}
