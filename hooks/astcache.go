package hooks

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/store/statedir"
)

// Bounds of the compiled-expression cache file.
const (
	astCacheFile       = "ast-cache.json"
	astCacheMaxBytes   = 32 << 20
	astCacheMaxEntries = 20000
	// astCacheVersion is the version of the file's format; a file of
	// another version is an empty cache.
	astCacheVersion = 2
	// domainASTCache separates the cache's MACs from the state
	// directory's other files (statedir.Key.Sum).
	domainASTCache = "celguard ast-cache entry v1"
)

// ASTCache is a compile.ASTCache kept in the state directory, so that each
// hook process skips parsing and type-checking the policies' expressions a
// previous process already checked.
//
// The agent can write the state directory (unless a rule stops it), and a
// cached checked expression is what a rule evaluates: a rewritten entry
// would change verdicts. So every entry carries an HMAC-SHA256, under the
// state key, of its cache key and its value; an entry whose MAC does not
// check is a miss (the expression is checked again) and is dropped from the
// file at the next save. A missing, unreadable or oversized file is an
// empty cache: the cache only ever saves time, it never decides.
type ASTCache struct {
	path string
	key  *statedir.Key

	mu      sync.Mutex
	entries map[string]*astCacheEntry
	dirty   bool
	// loaded says the file was read (load).
	loaded bool
}

// astCacheFileData is the cache file.
type astCacheFileData struct {
	Version int                       `json:"version"`
	Entries map[string]*astCacheEntry `json:"entries"`
}

// astCacheEntry is one serialized checked expression and its MAC.
type astCacheEntry struct {
	Value []byte `json:"v"`
	MAC   []byte `json:"mac"`
	// checked says the MAC was verified in this process.
	checked bool
}

// LoadASTCache is the cache of a state directory; its file is read at the
// first Get or Put (a compile replayed from the compiled-set cache needs
// none of it), entries checked against key when first used. With a nil
// key (the state key could not be loaded) the cache reads and writes
// nothing.
func LoadASTCache(dir string, key *statedir.Key) *ASTCache {
	return &ASTCache{path: filepath.Join(dir, astCacheFile), key: key, entries: map[string]*astCacheEntry{}}
}

// load reads the file once; the caller holds c.mu.
func (c *ASTCache) load() {
	if c.loaded || c.key == nil {
		return
	}
	c.loaded = true
	f, err := os.Open(c.path)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() > astCacheMaxBytes {
		return
	}
	if !c.read(json.NewDecoder(io.LimitReader(f, astCacheMaxBytes))) {
		// Written by another version (earlier ones had no MACs) or not
		// ours: start afresh (with what was read), and replace it at the
		// next save.
		c.dirty = true
	}
}

// read reads the file's entries from dec into c.entries, one at a time,
// as Save writes them (the version, then the entries, each key once), and
// stops at astCacheMaxEntries; false when the file is not one of this
// version's. The entries are checked one by one at their first use
// (valid), so the file is read before anything in it is vouched for, and
// the agent can write it: decoding it whole would let 32 MB of
// `"k1":{},"k2":{},...` allocate over 600 MB (a hook that runs out of
// memory crashes, which several hosts take as leave to go on). Read so, a
// file costs at most its entries' values and astCacheMaxEntries entries.
func (c *ASTCache) read(dec *json.Decoder) bool {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	if t, err := dec.Token(); err != nil || t != "version" {
		return false
	}
	var version int
	if err := dec.Decode(&version); err != nil || version != astCacheVersion {
		return false
	}
	if t, err := dec.Token(); err != nil || t != "entries" {
		return false
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() && len(c.entries) < astCacheMaxEntries {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return false
		}
		if _, dup := c.entries[k]; dup {
			return false
		}
		var e *astCacheEntry
		if err := dec.Decode(&e); err != nil {
			return false
		}
		if e != nil {
			c.entries[k] = e
		}
	}
	return true
}

// valid checks e's MAC once per process; the caller holds c.mu.
func (c *ASTCache) valid(k string, e *astCacheEntry) bool {
	if !e.checked {
		e.checked = c.key.Verify(e.MAC, domainASTCache, []byte(k), e.Value)
	}
	return e.checked
}

// Get implements compile.ASTCache. An entry whose MAC does not check is a
// miss, and is dropped.
func (c *ASTCache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if !c.valid(key, e) {
		delete(c.entries, key)
		c.dirty = true
		return nil, false
	}
	return e.Value, true
}

// Put implements compile.ASTCache.
func (c *ASTCache) Put(key string, value []byte) {
	if c.key == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= astCacheMaxEntries {
		return
	}
	c.entries[key] = &astCacheEntry{Value: value, MAC: c.key.Sum(domainASTCache, []byte(key), value), checked: true}
	c.dirty = true
}

// Save writes the cache back when a compile added or dropped entries,
// atomically (temp file and rename), so concurrent hooks never see a torn
// file. Entries whose MAC does not check are left out.
func (c *ASTCache) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty || c.key == nil {
		return nil
	}
	for k, e := range c.entries {
		if !c.valid(k, e) {
			delete(c.entries, k)
		}
	}
	data, err := json.Marshal(astCacheFileData{Version: astCacheVersion, Entries: c.entries})
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
