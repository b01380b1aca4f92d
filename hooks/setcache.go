package hooks

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/internal/gobuildid"
	"github.com/celguard/celguard/store/statedir"
)

// Bounds and names of the compiled-set cache.
const (
	// SetCacheDir is the directory of the state directory that holds the
	// compiled-set cache, one file per set.
	SetCacheDir      = "compiled"
	setCacheMaxBytes = 64 << 20
	// setCacheMaxFiles bounds the sets kept: a user with a few projects
	// and policy edits keeps the recent ones.
	setCacheMaxFiles = 16
	// setCacheVersion is the version of the file's format.
	setCacheVersion = 1
	// domainSetCache separates the cache's MACs from the state
	// directory's other files (statedir.Key.Sum).
	domainSetCache = "celguard compiled-set cache v1"
)

// SetCache is a compile.SetCache kept in the state directory, one file per
// compiled set under compiled/, so that each hook process replays the
// compile of the set the previous one made instead of checking and
// planning every expression again.
//
// A record is what rules evaluate, and the agent can write the state
// directory unless a rule stops it: the index of each file carries an
// HMAC-SHA256 under the state key over the binary's identity, the
// compile's key and the index itself (and the index holds the SHA-256 of
// every expression it names). A file whose MAC does not check, written by
// another binary (Build), for another key or in another format is a miss:
// the hook compiles in full, with the same answer, and writes the file
// again. A missing, unreadable or oversized file is a miss too: the cache
// only ever saves time, it never decides.
type SetCache struct {
	dir string
	key *statedir.Key
	// build identifies the binary (BinaryIdentity): a file written by
	// another build is never read.
	build string
}

// BinaryIdentity identifies the executable at exe for the compiled-set
// cache: its Go build ID (internal/gobuildid), which names the build by
// the hash of its inputs and output, so that the cache survives a copy, a
// reinstall or a touch of the same build and never serves another; for an
// executable without one (not ELF, or built with an empty -buildid), its
// path, size and modification time. "" when exe cannot be read (then no set
// is cached).
func BinaryIdentity(exe string) string {
	if id, err := gobuildid.Read(exe); err == nil {
		return "go-build-id\x00" + id
	}
	fi, err := os.Stat(exe)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return fmt.Sprintf("file\x00%s\x00%d\x00%d", exe, fi.Size(), fi.ModTime().UnixNano())
}

// setCacheFile is one file of the cache.
type setCacheFile struct {
	Version int
	Build   string
	Key     string
	MAC     []byte
	Index   []byte
	Blobs   [][]byte
}

// NewSetCache is the compiled-set cache of a state directory, for the
// binary build identifies. With a nil key (the state key could not be
// loaded) it reads and writes nothing.
func NewSetCache(dir string, key *statedir.Key, build string) *SetCache {
	return &SetCache{dir: filepath.Join(dir, SetCacheDir), key: key, build: build}
}

// path is the file of a compile key.
func (c *SetCache) path(key string) string {
	h := sha256.Sum256([]byte(c.build + "\x00" + key))
	return filepath.Join(c.dir, hex.EncodeToString(h[:16])+".gob")
}

// mac is the MAC of a record's index.
func (c *SetCache) mac(key string, index []byte) []byte {
	return c.key.Sum(domainSetCache, []byte(c.build), []byte(key), index)
}

// GetSet implements compile.SetCache: the record of key when its file
// exists and its MAC checks.
func (c *SetCache) GetSet(key string) ([]byte, [][]byte, bool) {
	if c.key == nil {
		return nil, nil, false
	}
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > setCacheMaxBytes {
		return nil, nil, false
	}
	var file setCacheFile
	if err := gob.NewDecoder(f).Decode(&file); err != nil {
		return nil, nil, false
	}
	if file.Version != setCacheVersion || file.Build != c.build || file.Key != key ||
		!c.key.Verify(file.MAC, domainSetCache, []byte(c.build), []byte(key), file.Index) {
		return nil, nil, false
	}
	return file.Index, file.Blobs, true
}

// PutSet implements compile.SetCache: it writes the record atomically
// (temp file and rename, mode 0600, in a 0700 directory), and keeps the
// most recent files only. Failures are ignored: the next process compiles
// in full.
func (c *SetCache) PutSet(key string, index []byte, blobs [][]byte) {
	if c.key == nil {
		return
	}
	var buf bytes.Buffer
	file := setCacheFile{Version: setCacheVersion, Build: c.build, Key: key, MAC: c.mac(key, index), Index: index, Blobs: blobs}
	if err := gob.NewEncoder(&buf).Encode(&file); err != nil || buf.Len() > setCacheMaxBytes {
		return
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	if err := atomicfile.Write(c.path(key), buf.Bytes(), 0o600); err != nil {
		return
	}
	c.prune()
}

// prune removes the least recently written files past setCacheMaxFiles.
func (c *SetCache) prune() {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  int64
	}
	var files []file
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".gob") {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), info.ModTime().UnixNano()})
		}
	}
	if len(files) <= setCacheMaxFiles {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(b.mod, a.mod) })
	for _, f := range files[setCacheMaxFiles:] {
		_ = os.Remove(filepath.Join(c.dir, f.name))
	}
}
