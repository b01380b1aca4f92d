package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/internal/atomicfile"
)

// Bounds of the compiled-expression cache file.
const (
	astCacheFile       = "ast-cache.json"
	astCacheMaxBytes   = 32 << 20
	astCacheMaxEntries = 20000
)

// ASTCache is a compile.ASTCache kept in the state directory, so that each
// hook process skips parsing and type-checking the policies' expressions a
// previous process already checked. A missing, unreadable or oversized file
// is an empty cache: the cache only ever saves time, it never decides.
type ASTCache struct {
	path  string
	mem   compile.MemoryASTCache
	dirty bool
}

// LoadASTCache reads the cache file of a state directory.
func LoadASTCache(dir string) *ASTCache {
	c := &ASTCache{path: filepath.Join(dir, astCacheFile)}
	f, err := os.Open(c.path)
	if err != nil {
		return c
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() > astCacheMaxBytes {
		return c
	}
	var entries map[string][]byte
	if err := json.NewDecoder(f).Decode(&entries); err != nil {
		return c
	}
	for k, v := range entries {
		c.mem.Put(k, v)
	}
	return c
}

// Get implements compile.ASTCache.
func (c *ASTCache) Get(key string) ([]byte, bool) { return c.mem.Get(key) }

// Put implements compile.ASTCache.
func (c *ASTCache) Put(key string, value []byte) {
	if c.mem.Len() >= astCacheMaxEntries {
		return
	}
	c.mem.Put(key, value)
	c.dirty = true
}

// Save writes the cache back when a compile added entries, atomically
// (temp file and rename), so concurrent hooks never see a torn file.
func (c *ASTCache) Save() error {
	if !c.dirty {
		return nil
	}
	data, err := json.Marshal(c.mem.Entries())
	if err != nil || len(data) > astCacheMaxBytes {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	if err := atomicfile.Write(c.path, data, 0o600); err != nil {
		return err
	}
	c.dirty = false
	return nil
}
