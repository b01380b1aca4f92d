package daemonwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/celguard/celguard/internal/fileowner"
)

// A Manifest says what a policy set was read from, so that a client that
// does not read and parse the policies itself (the lean hook client) can
// tell whether the daemon decided with exactly the sources it would read
// now: it takes the Snapshot of the same Roots again and compares (Check).
//
// Roots are every file and directory policy discovery consults for a
// call (policies.WatchRoots: the user's and the project's policy
// directories, the guard directories, the trust store, the admin layer
// and the directories above it, the .git entries that find the project
// root, the bundle configuration files and, for each bundle configured,
// its key files and its store's file (bundle.LayerConfig.Paths), the
// call's work directory). For
// each root the snapshot records where it resolves (symbolic links), and
// what it is: absent, a symbolic link and its target (followed), a
// directory with its mode and owner and, for a tree, the listing and every
// entry below it, a file with its mode, owner and, in a tree, its SHA-256.
// A file added to .celguard/ changes a listing, an edited trust store a
// hash, a directory made or removed above the work directory an entry:
// each makes Check fail, and the client decide another way.
//
// On the wire (Encode) a manifest is its roots and the SHA-256 of its
// entries (Sum): the client compares its own snapshot's sum, so the
// entries need not travel, nor be decoded (decoding them cost the lean
// client more than everything else it does).
type Manifest struct {
	Roots []Root
	// Entries are the snapshot's; nil in a decoded manifest, whose sum
	// stands for them.
	Entries []Entry
	sum     string
}

// Root is a path a Manifest snapshots: with Tree, everything below it and
// the content of every file; without, only what the path itself is.
type Root struct {
	Path string
	Tree bool
}

// Entry is one thing a snapshot saw: Kind (resolve, absent, link, dir,
// file, other) of Path, and Value (what it resolves to; mode, owner, and
// a listing's or a file's SHA-256; a link's target).
type Entry struct {
	Kind, Path, Value string
}

// Bounds of a snapshot: past them there is no manifest (ErrTooLarge) and
// a client decides another way.
const (
	MaxEntries     = 4096
	MaxHashedBytes = 16 << 20
	// MaxEncoded bounds an encoded manifest (a header's value).
	MaxEncoded = 512 << 10
	maxLinks   = 16
)

// ErrTooLarge is Snapshot's error past MaxEntries or MaxHashedBytes.
var ErrTooLarge = errors.New("too many files to snapshot")

// Snapshot records roots as they are now. Its error (a path that cannot
// be read for another reason than being absent, ErrTooLarge) means no
// manifest.
func Snapshot(roots []Root) (*Manifest, error) { return snapshotWith(roots, false) }

// snapshotWith is Snapshot, with or without its memory of the paths it
// looked at (snapshot.lstats).
func snapshotWith(roots []Root, noMemo bool) (*Manifest, error) {
	s := &snapshot{noMemo: noMemo}
	for _, r := range roots {
		if !filepath.IsAbs(r.Path) {
			return nil, fmt.Errorf("%s is not absolute", r.Path)
		}
		if err := s.resolve(r.Path); err != nil {
			return nil, err
		}
		if err := s.walk(filepath.Clean(r.Path), r.Tree, 0); err != nil {
			return nil, err
		}
	}
	return &Manifest{Roots: slices.Clone(roots), Entries: s.out, sum: sumOf(s.out)}, nil
}

type snapshot struct {
	out    []Entry
	hashed int64
	// lstats are the paths this snapshot has looked at (os.Lstat), each
	// looked at once: the roots share their leading directories (the home
	// directory, the repository), which filepath.EvalSymlinks would look
	// at again for each. A snapshot is of one moment either way: a change
	// while it is taken is what the next snapshot sees.
	lstats map[string]lstatResult
	// noMemo turns lstats off (tests: the snapshot without it).
	noMemo bool
}

// lstatResult is an os.Lstat's answer.
type lstatResult struct {
	fi  fs.FileInfo
	err error
}

// lstat is os.Lstat(p), once per snapshot.
func (s *snapshot) lstat(p string) (fs.FileInfo, error) {
	if s.noMemo {
		return os.Lstat(p)
	}
	if r, ok := s.lstats[p]; ok {
		return r.fi, r.err
	}
	fi, err := os.Lstat(p)
	if s.lstats == nil {
		s.lstats = map[string]lstatResult{}
	}
	s.lstats[p] = lstatResult{fi, err}
	return fi, err
}

// evalSymlinks is filepath.EvalSymlinks(p), looking at each leading
// directory once per snapshot (lstat): a clean absolute path is walked
// from the root one component at a time, as EvalSymlinks walks it, and
// the first symbolic link on the way hands the whole path to
// EvalSymlinks (TestSnapshotMemoIsEvalSymlinks).
func (s *snapshot) evalSymlinks(p string) (string, error) {
	if s.noMemo || runtime.GOOS == "windows" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return filepath.EvalSymlinks(p)
	}
	dest, rest := "/", p[1:]
	for rest != "" {
		comp := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		next := dest + comp
		if dest != "/" {
			next = dest + "/" + comp
		}
		fi, err := s.lstat(next)
		switch {
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			return filepath.EvalSymlinks(p)
		case !fi.IsDir() && rest != "":
			return "", syscall.ENOTDIR
		}
		dest = next
	}
	return dest, nil
}

func (s *snapshot) add(kind, path, value string) error {
	if len(s.out) >= MaxEntries {
		return ErrTooLarge
	}
	s.out = append(s.out, Entry{Kind: kind, Path: path, Value: value})
	return nil
}

// absent reports whether err says the path is not there (or a component
// above it is not a directory).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func (s *snapshot) resolve(p string) error {
	r, err := s.evalSymlinks(p)
	switch {
	case absent(err):
		r = ""
	case err != nil:
		return err
	}
	return s.add("resolve", p, r)
}

func (s *snapshot) walk(p string, tree bool, links int) error {
	fi, err := s.lstat(p)
	if absent(err) {
		return s.add("absent", p, "")
	}
	if err != nil {
		return err
	}
	uid, _ := fileowner.UID(fi)
	meta := fmt.Sprintf("%o %d", uint32(fi.Mode()), uid)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if err := s.add("link", p, meta+" "+target); err != nil {
			return err
		}
		if links >= maxLinks {
			return errors.New("too many symbolic links")
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		return s.walk(filepath.Clean(target), tree, links+1)
	case fi.IsDir():
		if !tree {
			return s.add("dir", p, meta)
		}
		ents, err := os.ReadDir(p) // sorted by name
		if err != nil {
			return err
		}
		h := sha256.New()
		for _, e := range ents {
			fmt.Fprintf(h, "%d:%s %o\x00", len(e.Name()), e.Name(), uint32(e.Type()))
		}
		if err := s.add("dir", p, meta+" "+hex.EncodeToString(h.Sum(nil))); err != nil {
			return err
		}
		for _, e := range ents {
			if err := s.walk(filepath.Join(p, e.Name()), true, links); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		if !tree {
			return s.add("file", p, meta)
		}
		sum, err := s.hash(p)
		if err != nil {
			return err
		}
		return s.add("file", p, meta+" "+sum)
	}
	return s.add("other", p, meta)
}

// hash is the SHA-256 of the file at p, within the snapshot's bound.
func (s *snapshot) hash(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxHashedBytes-s.hashed+1))
	s.hashed += n
	if err != nil {
		return "", err
	}
	if s.hashed > MaxHashedBytes {
		return "", ErrTooLarge
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Join is a manifest of a's roots and then b's, as one Snapshot of both
// would be; nil when either is nil or was decoded (has no entries).
func Join(a, b *Manifest) *Manifest {
	if a == nil || b == nil || a.Entries == nil || b.Entries == nil {
		return nil
	}
	entries := slices.Concat(a.Entries, b.Entries)
	return &Manifest{Roots: slices.Concat(a.Roots, b.Roots), Entries: entries, sum: sumOf(entries)}
}

// Sum is the SHA-256 (hex) of m's entries, each field length-prefixed. A
// manifest is never changed once made: many decisions read one at once.
func (m *Manifest) Sum() string { return m.sum }

// sumOf is the SHA-256 (hex) of entries, each field length-prefixed.
func sumOf(entries []Entry) string {
	h := sha256.New()
	var b []byte
	for _, e := range entries {
		// fmt's "%d:%s%d:%s%d:%s", without fmt.
		b = b[:0]
		for _, f := range [3]string{e.Kind, e.Path, e.Value} {
			b = strconv.AppendInt(b, int64(len(f)), 10)
			b = append(b, ':')
			b = append(b, f...)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Equal reports whether m and o hold the same roots and entries (their
// sums, for a decoded manifest).
func (m *Manifest) Equal(o *Manifest) bool {
	return m != nil && o != nil && slices.Equal(m.Roots, o.Roots) && m.Sum() == o.Sum()
}

// wireManifest is a manifest as it travels: each root as "t:PATH" (a
// tree) or "n:PATH", and the sum.
type wireManifest struct {
	R []string `json:"r"`
	S string   `json:"s"`
}

// Encode is m as a header value: base64url of its JSON (roots and sum);
// NoManifest when m is nil or larger than MaxEncoded.
func (m *Manifest) Encode() string {
	if m == nil {
		return NoManifest
	}
	w := wireManifest{R: make([]string, len(m.Roots)), S: m.Sum()}
	for i, r := range m.Roots {
		w.R[i] = "n:" + r.Path
		if r.Tree {
			w.R[i] = "t:" + r.Path
		}
	}
	b, err := json.Marshal(w)
	if err != nil || base64.RawURLEncoding.EncodedLen(len(b)) > MaxEncoded {
		return NoManifest
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeManifest reads an encoded manifest (Encode) strictly: no unknown
// field, no trailing data, at least one root, absolute paths, a SHA-256.
func DecodeManifest(s string) (*Manifest, error) {
	if len(s) > MaxEncoded {
		return nil, fmt.Errorf("a manifest larger than %d bytes", MaxEncoded)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("a manifest that is not base64url: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w wireManifest
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("a manifest that does not decode: %w", err)
	}
	if dec.More() {
		return nil, errors.New("a manifest with trailing data")
	}
	if len(w.R) == 0 || len(w.R) > MaxEntries {
		return nil, errors.New("a manifest with no root or too many")
	}
	if sum, err := hex.DecodeString(w.S); err != nil || len(sum) != sha256.Size || hex.EncodeToString(sum) != w.S {
		return nil, errors.New("a manifest without a SHA-256")
	}
	m := &Manifest{Roots: make([]Root, len(w.R)), sum: w.S}
	for i, r := range w.R {
		kind, path, _ := strings.Cut(r, ":")
		if kind != "t" && kind != "n" || !filepath.IsAbs(path) {
			return nil, fmt.Errorf("a manifest root %q that is not t: or n: and an absolute path", r)
		}
		m.Roots[i] = Root{Path: path, Tree: kind == "t"}
	}
	return m, nil
}

// Check takes the snapshot of m's roots again and reports, as an error,
// that it differs from m (or cannot be taken).
func (m *Manifest) Check() error {
	now, err := Snapshot(m.Roots)
	if err != nil {
		return err
	}
	if now.Sum() != m.Sum() {
		return errors.New("a file or directory it was read from changed")
	}
	return nil
}
