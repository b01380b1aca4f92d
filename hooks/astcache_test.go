package hooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/store/statedir"
)

// loadCache loads the AST cache of dir with dir's key.
func loadCache(t *testing.T, dir string) *hooks.ASTCache {
	t.Helper()
	key, err := statedir.LoadKey(dir)
	require.NoError(t, err)
	return hooks.LoadASTCache(dir, key)
}

func TestASTCacheRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := loadCache(t, dir)
	_, ok := c.Get("k")
	assert.False(t, ok, "a missing file is an empty cache")
	require.NoError(t, c.Save(), "nothing to save is not an error")
	_, err := os.Stat(filepath.Join(dir, "ast-cache.json"))
	assert.True(t, os.IsNotExist(err), "an unchanged cache is not written")

	c.Put("k", []byte{1, 2, 3})
	require.NoError(t, c.Save())
	st, err := os.Stat(filepath.Join(dir, "ast-cache.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	v, ok := loadCache(t, dir).Get("k")
	require.True(t, ok)
	assert.Equal(t, []byte{1, 2, 3}, v)
}

func TestASTCacheToleratesABadFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ast-cache.json"), []byte("{not json"), 0o600))
	c := loadCache(t, dir)
	_, ok := c.Get("k")
	assert.False(t, ok)
	c.Put("k", []byte("v"))
	require.NoError(t, c.Save(), "a bad file is replaced")
	_, ok = loadCache(t, dir).Get("k")
	assert.True(t, ok)
}

// cacheFile is the cache file's JSON, as an attacker edits it.
type cacheFile struct {
	Version int                          `json:"version"`
	Entries map[string]map[string][]byte `json:"entries"`
}

func readCacheFile(t *testing.T, dir string) cacheFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "ast-cache.json"))
	require.NoError(t, err)
	var f cacheFile
	require.NoError(t, json.Unmarshal(data, &f))
	return f
}

func writeCacheFile(t *testing.T, dir string, f cacheFile) {
	t.Helper()
	data, err := json.Marshal(f)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ast-cache.json"), data, 0o600))
}

// TestASTCacheRefusesForgedEntries: an entry whose value, key or MAC was
// changed, an entry with no MAC, one moved to another key, one signed with
// another key and a file of the old unsigned format are all misses, and
// the next save drops them.
func TestASTCacheRefusesForgedEntries(t *testing.T) {
	dir := t.TempDir()
	c := loadCache(t, dir)
	c.Put("a", []byte("value a"))
	c.Put("b", []byte("value b"))
	c.Put("keep", []byte("kept"))
	require.NoError(t, c.Save())
	f := readCacheFile(t, dir)

	f.Entries["a"]["v"] = []byte("forged a")                 // value rewritten, old MAC
	f.Entries["b"] = map[string][]byte{"v": []byte("b")}     // no MAC
	f.Entries["moved"] = f.Entries["keep"]                   // a valid entry under another key
	f.Entries["c"] = map[string][]byte{"v": nil, "mac": nil} // empty
	writeCacheFile(t, dir, f)

	c = loadCache(t, dir)
	for _, k := range []string{"a", "b", "moved", "c"} {
		_, ok := c.Get(k)
		assert.False(t, ok, "forged entry %q was used", k)
	}
	v, ok := c.Get("keep")
	require.True(t, ok)
	assert.Equal(t, "kept", string(v))
	require.NoError(t, c.Save(), "the forged entries are dropped")
	assert.ElementsMatch(t, []string{"keep"}, keys(readCacheFile(t, dir).Entries))

	// Another state directory's key signs nothing here.
	other := t.TempDir()
	oc := loadCache(t, other)
	oc.Put("x", []byte("from elsewhere"))
	require.NoError(t, oc.Save())
	data, err := os.ReadFile(filepath.Join(other, "ast-cache.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ast-cache.json"), data, 0o600))
	_, ok = loadCache(t, dir).Get("x")
	assert.False(t, ok, "an entry signed with another key was used")

	// The format before MACs: a map of key to value.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ast-cache.json"), []byte(`{"x":"AQID"}`), 0o600))
	_, ok = loadCache(t, dir).Get("x")
	assert.False(t, ok, "an unsigned entry of the old format was used")
}

// TestASTCacheWithoutKey: with no key the cache neither reads nor writes.
func TestASTCacheWithoutKey(t *testing.T) {
	dir := t.TempDir()
	c := loadCache(t, dir)
	c.Put("k", []byte("v"))
	require.NoError(t, c.Save())
	nk := hooks.LoadASTCache(dir, nil)
	_, ok := nk.Get("k")
	assert.False(t, ok)
	nk.Put("k2", []byte("v"))
	require.NoError(t, nk.Save())
	assert.ElementsMatch(t, []string{"k"}, keys(readCacheFile(t, dir).Entries))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A cache file is read before any entry's MAC is checked, and the agent
// can write it: whatever it holds, reading it costs at most its own size
// and a bounded number of entries (astCacheMaxEntries). Decoded whole, 4
// MB of distinct empty entries allocated 80 MB.
func TestASTCacheForgedFileBounded(t *testing.T) {
	entries := func(key func(i int) string) []byte {
		var b bytes.Buffer
		b.WriteString(`{"version":2,"entries":{`)
		for i := 0; b.Len() < 4<<20; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `%q:{}`, key(i))
		}
		b.WriteString(`}}`)
		return b.Bytes()
	}
	for name, data := range map[string][]byte{
		"distinct keys":  entries(func(i int) string { return strconv.FormatInt(int64(i), 36) }),
		"one key":        entries(func(int) string { return "k" }),
		"entries first":  []byte(`{"entries":{"k":{}},"version":2}`),
		"a deep nesting": []byte(`{"version":2,"entries":{"k":` + strings.Repeat("[", 1<<20)),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := loadCache(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ast-cache.json"), data, 0o600))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, ok := c.Get("k")
			runtime.ReadMemStats(&after)
			assert.False(t, ok)
			n := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, n, uint64(len(data))+8<<20, "%d bytes of file made %d bytes of allocation", len(data), n)
		})
	}
}

// FuzzASTCacheFile reads forged cache files: reading one never panics, and
// only the entry the cache wrote, under its MAC, is ever a hit.
func FuzzASTCacheFile(f *testing.F) {
	dir := f.TempDir()
	key, err := statedir.LoadKey(dir)
	require.NoError(f, err)
	c := hooks.LoadASTCache(dir, key)
	c.Put("k", []byte("value"))
	require.NoError(f, c.Save())
	good, err := os.ReadFile(filepath.Join(dir, "ast-cache.json"))
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"version":2,"entries":{"k":{"v":"dmFsdWU=","mac":""},"k":{}}}`))
	f.Add([]byte(`{"version":2,"entries":{"k":null}}`))
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, "ast-cache.json"), data, 0o600))
		v, ok := hooks.LoadASTCache(d, key).Get("k")
		if ok {
			assert.Equal(t, "value", string(v), "only the entry written passes its MAC")
		}
		_, ok = hooks.LoadASTCache(d, key).Get("other")
		assert.False(t, ok)
	})
}
