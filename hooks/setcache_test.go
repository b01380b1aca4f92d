package hooks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// keyedSetCache is a SetCache that remembers the compile keys it stored.
type keyedSetCache struct {
	*SetCache
	keys []string
}

func (c *keyedSetCache) PutSet(key string, index []byte) {
	c.keys = append(c.keys, key)
	c.SetCache.PutSet(key, index)
}

// setCacheIn is the compiled-set cache of a state directory for the
// binary build.
func setCacheIn(t *testing.T, dir, build string) *keyedSetCache {
	t.Helper()
	key, err := statedir.LoadKey(dir)
	require.NoError(t, err)
	return &keyedSetCache{SetCache: NewSetCache(dir, key, build)}
}

// compileWith compiles srcs with the set cache c.
func compileWith(t *testing.T, srcs []policy.Source, c compile.SetCache) *compile.PolicySet {
	t.Helper()
	set, err := compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	return set
}

// goldenEvents are the golden events of every host, by host.
func goldenEvents(t *testing.T) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, host := range Hosts() {
		files, err := filepath.Glob(filepath.Join("testdata", host, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			out[host] = append(out[host], b)
		}
	}
	return out
}

// answers are the answers (exit code, stdout, stderr) to every event,
// decided with set, each event in a fresh state directory.
func answers(t *testing.T, set *compile.PolicySet, events map[string][][]byte) []string {
	t.Helper()
	var out []string
	for _, host := range Hosts() {
		for _, ev := range events[host] {
			r := testRunner(t, host, Options{}, nil)
			r.Engine = storedEngine(set, r)
			out = append(out, host+"\n"+string(encodeGolden(r.Run(context.Background(), ev))))
		}
	}
	return out
}

// The differential test: every golden event of every host gets the same
// answer, byte for byte, from a set replayed from the compiled-set cache
// as from the set compiled in full, for the golden policy and the
// built-in bundle.
func TestSetCacheAnswersAlike(t *testing.T) {
	events := goldenEvents(t)
	builtin, err := policies.Sources()
	require.NoError(t, err)
	golden, err := policy.LoadPaths(filepath.Join("testdata", "policy.yaml"))
	require.NoError(t, err)
	for name, srcs := range map[string][]policy.Source{"golden": golden, "builtin": builtin} {
		t.Run(name, func(t *testing.T) {
			full, err := compile.Compile(srcs)
			require.NoError(t, err)
			dir := t.TempDir()
			cache := setCacheIn(t, dir, "build-1")
			first := compileWith(t, srcs, cache)
			assert.False(t, first.FromCache(), "the first compile is a full one")
			require.Len(t, cache.keys, 1, "and records the set")
			replayed := compileWith(t, srcs, cache)
			require.True(t, replayed.FromCache())
			assert.Equal(t, full.Digest(), replayed.Digest())
			assert.Equal(t, full.Warnings(), replayed.Warnings())
			assert.Equal(t, len(full.Rules()), len(replayed.Rules()))
			assert.Equal(t, answers(t, full, events), answers(t, replayed, events))

			st, err := os.Stat(filepath.Join(dir, SetCacheDir))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
			st, err = os.Stat(cache.path(cache.keys[0]))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		})
	}
}

// A record the agent changed, wrote for other policies, or that another
// binary or another state key wrote, is never replayed as it is: the
// compile is a full one (or, for a changed expression, that expression
// is), with the same answers, and the record is written again.
func TestSetCacheTampered(t *testing.T) {
	events := goldenEvents(t)
	events = map[string][][]byte{"claude-code": events["claude-code"], "codex": events["codex"]}
	srcs, err := policy.LoadPaths(filepath.Join("testdata", "policy.yaml"))
	require.NoError(t, err)
	full, err := compile.Compile(srcs)
	require.NoError(t, err)
	want := answers(t, full, events)

	dir := t.TempDir()
	cache := setCacheIn(t, dir, "build-1")
	compileWith(t, srcs, cache)
	require.Len(t, cache.keys, 1)
	path := cache.path(cache.keys[0])
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, compileWith(t, srcs, cache).FromCache())

	// replayedAlike checks that a compile with c answers as the full set,
	// and says whether it replayed a record.
	replayedAlike := func(t *testing.T, c compile.SetCache) bool {
		t.Helper()
		set := compileWith(t, srcs, c)
		assert.Equal(t, want, answers(t, set, events))
		return set.FromCache()
	}

	t.Run("flipped bytes", func(t *testing.T) {
		file := splitSetFile(t, good)
		// A byte of the magic, of the MAC, of the index's start, middle
		// and end, and bytes spread over the whole file: all under the
		// MAC, all a miss.
		offsets := []int{0, bytes.Index(good, file.mac), setCacheFrame, setCacheFrame + len(file.index)/2, len(good) - 1}
		for i := 1; i < 16; i++ {
			offsets = append(offsets, i*len(good)/16)
		}
		for _, off := range offsets {
			bad := bytes.Clone(good)
			bad[off] ^= 0x20
			require.NoError(t, os.WriteFile(path, bad, 0o600))
			assert.False(t, replayedAlike(t, cache), "a flipped byte at %d is a miss", off)
		}
		for _, n := range []int{0, 1, len(good) / 2, len(good) - 1} {
			require.NoError(t, os.WriteFile(path, good[:n], 0o600))
			assert.False(t, replayedAlike(t, cache), "a truncated file (%d bytes) is a miss", n)
		}
	})

	t.Run("another policy set's record", func(t *testing.T) {
		// The record of a set where the block rule allows, moved to the
		// file of this set: its key is another one, and a key rewritten
		// breaks the MAC.
		other := []policy.Source{{Name: srcs[0].Name, Data: bytes.Replace(srcs[0].Data, []byte("verdict: block"), []byte("verdict: allow"), 1)}}
		require.NotEqual(t, srcs[0].Data, other[0].Data)
		oc := setCacheIn(t, t.TempDir(), "build-1")
		compileWith(t, other, oc)
		require.Len(t, oc.keys, 1)
		forged, err := os.ReadFile(oc.path(oc.keys[0]))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, forged, 0o600))
		assert.False(t, replayedAlike(t, cache), "another set's record (the key is under the MAC)")
		assert.True(t, replayedAlike(t, cache), "the full compile wrote the record again")
	})

	t.Run("another binary", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, good, 0o600))
		other := setCacheIn(t, dir, "build-2")
		assert.NotEqual(t, path, other.path(cache.keys[0]), "each build has its own files")
		require.NoError(t, os.WriteFile(other.path(cache.keys[0]), good, 0o600))
		assert.False(t, replayedAlike(t, other), "build-1's record read by build-2 (the build is under the MAC)")
		assert.True(t, replayedAlike(t, cache), "build-1's own record still replays")
	})

	t.Run("another state key", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, good, 0o600))
		require.NoError(t, os.Remove(filepath.Join(dir, statedir.KeyFile)))
		fresh := setCacheIn(t, dir, "build-1")
		assert.False(t, replayedAlike(t, fresh), "a record signed with the old key")
		assert.True(t, replayedAlike(t, fresh))
	})

	t.Run("no key", func(t *testing.T) {
		nokey := NewSetCache(t.TempDir(), nil, "build-1")
		assert.False(t, replayedAlike(t, nokey))
		assert.False(t, replayedAlike(t, nokey), "without the state key nothing is kept")
	})
}

// The cache keeps the most recent sets only.
func TestSetCachePrunes(t *testing.T) {
	dir := t.TempDir()
	c := setCacheIn(t, dir, "b")
	for i := range setCacheMaxFiles + 5 {
		c.PutSet(string(rune('a'+i)), []byte{byte(i)})
	}
	files, err := filepath.Glob(filepath.Join(dir, SetCacheDir, "*.gob"))
	require.NoError(t, err)
	assert.Len(t, files, setCacheMaxFiles)
}
