package hooks

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// allocated is the bytes the heap allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// forgedLengths are set-cache files an agent could write whose encodings
// claim huge lengths, by name: every one must be a miss that costs no more
// memory than its own bytes (and a small constant).
func forgedLengths(t testing.TB, c *SetCache, key string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	// The file of the first format, its gob claiming 4M blobs: one byte
	// of input each, 24 bytes of slice header each once decoded.
	var gb bytes.Buffer
	require.NoError(t, gob.NewEncoder(&gb).Encode(&struct {
		Version    int
		Build, Key string
		MAC, Index []byte
		Blobs      [][]byte
	}{1, c.build, key, make([]byte, 32), []byte("index"), make([][]byte, 4<<20)}))
	out["gob, 4M empty blobs"] = gb.Bytes()

	// A gob type definition of a struct with 1M fields (a wire type is
	// the writer's to choose), then the header of this format around it.
	var wb bytes.Buffer
	type field struct {
		Name string
		ID   int
	}
	require.NoError(t, gob.NewEncoder(&wb).Encode(make([]field, 1<<20)))
	out["gob, 1M struct elements"] = wb.Bytes()
	// The same as the index of a file of this format, with a MAC that
	// does not check.
	out["framed, gob index of 1M elements"] = frame(make([]byte, 32), wb.Bytes())

	// The second format's frame, its header's length claiming 4 GiB.
	second := binary.BigEndian.AppendUint32(append([]byte("cgset/2\n"), make([]byte, 32)...), 0xFFFFFFFF)
	out["second format, 4 GiB header"] = append(second, "header"...)
	out["empty"] = nil
	out["magic only"] = []byte(setCacheMagic)
	return out
}

// setFile is a file of the cache, cut into its parts (aliasing its bytes).
type setFile struct {
	mac, index []byte
}

// splitSetFile cuts a file of the cache into its parts.
func splitSetFile(t *testing.T, data []byte) setFile {
	t.Helper()
	require.Greater(t, len(data), setCacheFrame)
	require.Equal(t, setCacheMagic, string(data[:len(setCacheMagic)]))
	return setFile{mac: data[len(setCacheMagic):setCacheFrame], index: data[setCacheFrame:]}
}

// frame is a file of this format with the given MAC and index.
func frame(mac, index []byte) []byte {
	out := append([]byte(setCacheMagic), mac...)
	return append(out, index...)
}

// A set-cache file is read before its MAC can vouch for it, and the agent
// can write it: whatever lengths its encoding claims, reading it is a miss
// that allocates no more than the file's own size (a hook that runs out of
// memory crashes, and several hosts let the call through on a crashed
// hook). The first format was a gob, decoded before its MAC was checked:
// 4 MB of input made gob allocate over 200 MB.
func TestSetCacheForgedLengthsBounded(t *testing.T) {
	dir := t.TempDir()
	c := setCacheIn(t, dir, "build-1")
	srcs, err := policy.LoadPaths(filepath.Join("testdata", "policy.yaml"))
	require.NoError(t, err)
	compileWith(t, srcs, c)
	require.Len(t, c.keys, 1)
	key := c.keys[0]
	path := c.path(key)
	for name, data := range forgedLengths(t, c.SetCache, key) {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, data, 0o600))
			var ok bool
			n := allocated(func() { _, ok = c.GetSet(key) })
			assert.False(t, ok, "a forged file is a miss")
			assert.LessOrEqual(t, n, uint64(len(data))+64<<10, "%d bytes of file made %d bytes of allocation", len(data), n)
		})
	}
}

// FuzzSetCacheFile reads forged files: reading one never panics, a file
// accepted has the index the cache wrote (nothing else passes the MAC),
// and a file refused allocates almost nothing whatever lengths it claims
// (no decoding before the MAC).
func FuzzSetCacheFile(f *testing.F) {
	dir := f.TempDir()
	key, err := statedir.LoadKey(dir)
	require.NoError(f, err)
	c := NewSetCache(dir, key, "build-1")
	const setKey = "set:fuzz"
	c.PutSet(setKey, []byte("the index"))
	good, err := os.ReadFile(c.path(setKey))
	require.NoError(f, err)
	f.Add(good)
	for _, data := range forgedLengths(f, c, setKey) {
		f.Add(data)
	}
	for _, n := range []int{0, setCacheFrame - 1, setCacheFrame, len(good) - 1} {
		f.Add(good[:n])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			index []byte
			ok    bool
		)
		n := allocated(func() { index, ok = c.open(setKey, data) })
		if !ok {
			assert.LessOrEqual(t, n, uint64(64<<10), "a refused file of %d bytes allocated %d", len(data), n)
			return
		}
		require.Equal(t, good, data, "only the file written passes the MAC")
		assert.Equal(t, "the index", string(index))
	})
}
