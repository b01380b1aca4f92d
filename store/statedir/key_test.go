package statedir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/internal/unprivileged"
)

// TestKeyMadeOnceAndKept: the first use makes a 0600 key of 32 bytes; later
// uses read the same key.
func TestKeyMadeOnceAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	k1, err := LoadKey(dir)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	require.NoError(t, err)
	assert.Equal(t, int64(keySize), fi.Size())
	if runtime.GOOS != "windows" {
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	k2, err := LoadKey(dir)
	require.NoError(t, err)
	assert.Equal(t, k1.k, k2.k)
	assert.NotEqual(t, [keySize]byte{}, k1.k)
	assert.NotContains(t, fmt.Sprintf("%v %s %#v %+v", k1, k1, k1, k1), string(k1.k[:4]), "the key is never printed")
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file is left")
}

// TestKeyConcurrentCreation: hooks starting at once in a fresh directory
// all end up with the one key on disk.
func TestKeyConcurrentCreation(t *testing.T) {
	for range 5 {
		dir := t.TempDir()
		const n = 16
		keys := make([]*Key, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				keys[i], errs[i] = LoadKey(dir)
			}()
		}
		close(start)
		wg.Wait()
		onDisk, err := os.ReadFile(filepath.Join(dir, KeyFile))
		require.NoError(t, err)
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, onDisk, keys[i].k[:], "creator %d has another key than the file", i)
		}
	}
}

// TestKeyExclusiveFallback: where hard links are missing, O_EXCL decides
// between creators, and the loser reads the winner's key.
func TestKeyExclusiveFallback(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFile)
	a, b := &Key{k: [keySize]byte{1}}, &Key{k: [keySize]byte{2}}
	got, err := createKeyExclusive(path, a)
	require.NoError(t, err)
	assert.Equal(t, a.k, got.k)
	got, err = createKeyExclusive(path, b)
	require.NoError(t, err)
	assert.Equal(t, a.k, got.k, "the second creator reads the first one's key")
}

// TestKeyBrokenFailsClosed: a key file that is there but unusable is an
// error, and it is never replaced.
func TestKeyBrokenFailsClosed(t *testing.T) {
	cases := map[string]struct {
		data []byte
		mode os.FileMode
		want string
	}{
		"empty":     {[]byte{}, 0o600, "does not hold a key"},
		"short":     {[]byte("abc"), 0o600, "does not hold a key"},
		"long":      {bytes.Repeat([]byte{7}, keySize+1), 0o600, "does not hold a key"},
		"too open":  {bytes.Repeat([]byte{7}, keySize), 0o644, "may be read or written by others"},
		"directory": {nil, 0, "is not a regular file"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.mode&0o077 != 0 && runtime.GOOS == "windows" {
				t.Skip("no permission bits")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFile)
			if name == "directory" {
				require.NoError(t, os.Mkdir(path, 0o700))
			} else {
				require.NoError(t, os.WriteFile(path, c.data, c.mode))
				require.NoError(t, os.Chmod(path, c.mode))
			}
			_, err := LoadKey(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "will not decide with it nor replace it")
			if name != "directory" {
				after, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, c.data, after, "a broken key is never replaced")
			}
		})
	}
}

// TestKeyUnreadable: a key celguard cannot open is an error, not a new key.
func TestKeyUnreadable(t *testing.T) {
	unprivileged.Run(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, KeyFile)
		require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{7}, keySize), 0o600))
		require.NoError(t, os.Chmod(path, 0o000))
		_, err := LoadKey(dir)
		assert.ErrorContains(t, err, "cannot be read")
	})
}

// TestKeyMACs: MACs depend on the key, the domain and every part, with no
// ambiguity between how the parts are split.
func TestKeyMACs(t *testing.T) {
	k1, k2 := &Key{k: [keySize]byte{1}}, &Key{k: [keySize]byte{2}}
	m := k1.Sum(domainState, []byte("ab"), []byte("c"))
	assert.True(t, k1.Verify(m, domainState, []byte("ab"), []byte("c")))
	assert.False(t, k2.Verify(m, domainState, []byte("ab"), []byte("c")), "another key")
	assert.False(t, k1.Verify(m, "celguard another domain v1", []byte("ab"), []byte("c")), "another domain")
	assert.False(t, k1.Verify(m, domainState, []byte("a"), []byte("bc")), "parts split elsewhere")
	assert.False(t, k1.Verify(m[:31], domainState, []byte("ab"), []byte("c")), "a cut MAC")
	assert.False(t, k1.Verify(nil, domainState, []byte("ab"), []byte("c")), "no MAC")
}
