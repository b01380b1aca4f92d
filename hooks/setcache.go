package hooks

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"io"
	"math"
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
	// setCacheMagic begins a file of this format (setCacheHeader).
	setCacheMagic = "cgset/2\n"
	// domainSetCache separates the cache's MACs from the state
	// directory's other files (statedir.Key.Sum).
	domainSetCache = "celguard compiled-set cache v2"
)

// SetCache is a compile.SetCache kept in the state directory, one file per
// compiled set under compiled/, so that each hook process replays the
// compile of the set the previous one made instead of checking and
// planning every expression again.
//
// A record is what rules evaluate, and the agent can write the state
// directory unless a rule stops it: each file carries an HMAC-SHA256 under
// the state key over the binary's identity, the compile's key and the
// file's header (the index and the blobs' sizes; the index holds the
// SHA-256 of every expression it names), checked before anything in the
// file is decoded (setCacheHeader). A file whose MAC does not check,
// written by another binary (build), for another key or in another format
// is a miss:
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

// A file of the cache is, in this order:
//   - setCacheMagic;
//   - the MAC (sha256.Size bytes) of the build, the compile's key and the
//     header, under the state key;
//   - the header's length, a big-endian uint32;
//   - the header: the gob of a setCacheHeader;
//   - the blobs, one after the other, setCacheHeader.Sizes long.
//
// The MAC is checked on the header's bytes before anything is decoded: an
// agent can write this file, and gob decodes what the writer describes (its
// wire types, its lengths), so that a forged gob of a few megabytes makes
// the decoder allocate up to a gigabyte, and a hook that runs out of memory
// crashes (several hosts let the call through then). Reading a forged
// file costs its bytes, which setCacheMaxBytes bounds. The blobs are not
// under the MAC: the header's lengths cut them, and the index names each
// by its SHA-256 (compile.SetCache).
type setCacheHeader struct {
	Index []byte
	Sizes []int
}

// setCacheFrame is the length of a file's fixed part: the magic, the MAC
// and the header's length.
const setCacheFrame = len(setCacheMagic) + sha256.Size + 4

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
func (c *SetCache) GetSet(key string) ([]byte, [][]byte, bool) {
	if c.key == nil {
		return nil, nil, false
	}
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < int64(setCacheFrame) || st.Size() > setCacheMaxBytes {
		return nil, nil, false
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, false
	}
	return c.open(key, data)
}

// open is the record of key in data, a file's bytes: the header is decoded
// only once its MAC checks.
func (c *SetCache) open(key string, data []byte) ([]byte, [][]byte, bool) {
	if len(data) < setCacheFrame || string(data[:len(setCacheMagic)]) != setCacheMagic {
		return nil, nil, false
	}
	mac := data[len(setCacheMagic) : len(setCacheMagic)+sha256.Size]
	n := binary.BigEndian.Uint32(data[setCacheFrame-4 : setCacheFrame])
	if uint64(n) > uint64(len(data)-setCacheFrame) {
		return nil, nil, false
	}
	header, rest := data[setCacheFrame:setCacheFrame+int(n)], data[setCacheFrame+int(n):]
	if !c.key.Verify(mac, domainSetCache, []byte(c.build), []byte(key), header) {
		return nil, nil, false
	}
	var h setCacheHeader
	if err := gob.NewDecoder(bytes.NewReader(header)).Decode(&h); err != nil {
		return nil, nil, false
	}
	blobs := make([][]byte, len(h.Sizes))
	for i, size := range h.Sizes {
		if size < 0 || size > len(rest) {
			return nil, nil, false
		}
		blobs[i], rest = rest[:size:size], rest[size:]
	}
	if len(rest) != 0 {
		return nil, nil, false
	}
	return h.Index, blobs, true
}

// PutSet implements compile.SetCache: it writes the record atomically
// (temp file and rename, mode 0600, in a 0700 directory), and keeps the
// most recent files only. Failures are ignored: the next process compiles
// in full.
func (c *SetCache) PutSet(key string, index []byte, blobs [][]byte) {
	if c.key == nil {
		return
	}
	h := setCacheHeader{Index: index, Sizes: make([]int, len(blobs))}
	total := 0
	for i, b := range blobs {
		h.Sizes[i] = len(b)
		total += len(b)
	}
	var header bytes.Buffer
	if err := gob.NewEncoder(&header).Encode(&h); err != nil || header.Len() > math.MaxUint32 ||
		setCacheFrame+header.Len()+total > setCacheMaxBytes {
		return
	}
	file := make([]byte, 0, setCacheFrame+header.Len()+total)
	file = append(file, setCacheMagic...)
	file = append(file, c.key.Sum(domainSetCache, []byte(c.build), []byte(key), header.Bytes())...)
	file = binary.BigEndian.AppendUint32(file, uint32(header.Len()))
	file = append(file, header.Bytes()...)
	for _, b := range blobs {
		file = append(file, b...)
	}
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
