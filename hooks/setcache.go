package hooks

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
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
	// setCacheMagic begins a file of this format (setCacheFrame).
	setCacheMagic = "cgset/3\n"
	// domainSetCache separates the cache's MACs from the state
	// directory's other files (statedir.Key.Sum).
	domainSetCache = "celguard compiled-set cache v3"
)

// SetCache is a compile.SetCache kept in the state directory, one file per
// compiled set under compiled/, so that each hook process replays the
// compile of the set the previous one made instead of checking and
// planning every expression again.
//
// A record is what rules evaluate, and the agent can write the state
// directory unless a rule stops it: each file carries an HMAC-SHA256 under
// the state key over the binary's identity, the compile's key and the
// record's index, which holds everything the record says, checked before
// anything in the file is decoded (setCacheFrame). A file whose MAC does
// not check, written by another binary (build), for another key or in
// another format is a miss: the hook compiles in full, with the same
// answer, and writes the file again. A missing, unreadable or oversized file is a miss too: the cache
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

// A file of the cache is, in this order:
//   - setCacheMagic;
//   - the MAC (sha256.Size bytes) of the build, the compile's key and the
//     index, under the state key;
//   - the index (compile.SetCache), to the end of the file.
//
// The MAC is checked before anything is decoded: an agent can write this
// file, and gob (the index's encoding) decodes what the writer describes
// (its wire types, its lengths), so that a forged gob of a few megabytes
// makes the decoder allocate up to a gigabyte, and a hook that runs out of
// memory crashes (several hosts let the call through then). Reading a
// forged file costs its bytes, which setCacheMaxBytes bounds.

// setCacheFrame is the length of a file's fixed part: the magic and the
// MAC.
const setCacheFrame = len(setCacheMagic) + sha256.Size

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

// GetSet implements compile.SetCache: the record of key when its file
// exists and its MAC checks.
func (c *SetCache) GetSet(key string) ([]byte, bool) {
	if c.key == nil {
		return nil, false
	}
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < int64(setCacheFrame) || st.Size() > setCacheMaxBytes {
		return nil, false
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, false
	}
	return c.open(key, data)
}

// open is the record of key in data, a file's bytes, when its MAC checks.
func (c *SetCache) open(key string, data []byte) ([]byte, bool) {
	if len(data) < setCacheFrame || string(data[:len(setCacheMagic)]) != setCacheMagic {
		return nil, false
	}
	mac, index := data[len(setCacheMagic):setCacheFrame], data[setCacheFrame:]
	if !c.key.Verify(mac, domainSetCache, []byte(c.build), []byte(key), index) {
		return nil, false
	}
	return index, true
}

// PutSet implements compile.SetCache: it writes the record atomically
// (temp file and rename, mode 0600, in a 0700 directory), and keeps the
// most recent files only. Failures are ignored: the next process compiles
// in full.
func (c *SetCache) PutSet(key string, index []byte) {
	if c.key == nil || setCacheFrame+len(index) > setCacheMaxBytes {
		return
	}
	file := make([]byte, 0, setCacheFrame+len(index))
	file = append(file, setCacheMagic...)
	file = append(file, c.key.Sum(domainSetCache, []byte(c.build), []byte(key), index)...)
	file = append(file, index...)
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	if err := atomicfile.Write(c.path(key), file, 0o600); err != nil {
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
