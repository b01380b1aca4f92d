// Package trust is the user's trust store: the record of the projects whose
// .celguard/ policies the user trusts, each bound to the digest of the files
// the user saw when they trusted it (docs/layers.md, rule 4). A project
// whose files changed since is untrusted again.
//
// It is a package of its own, below policies, because two parts of celguard
// read the store and neither owns the other: policies.Discover marks a
// project layer untrusted unless the store holds its root with the digest of
// exactly the files it loaded, and the command line (celguard trust) records,
// lists and revokes entries. It knows nothing of the policy language: it
// digests named files and keeps roots.
//
// The store is one JSON file, by default trust.json in the user's celguard
// configuration directory ($XDG_CONFIG_HOME/celguard, or
// ~/.config/celguard), beside the user's policies. It is written atomically
// with mode 0600. A store that cannot be believed (malformed, of an unknown
// version, owned by another user or writable by group or others) is an
// error naming the file; whoever reads it treats every project as untrusted.
package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/internal/fileowner"
	"github.com/celguard/celguard/policy"
)

// FileName is the trust store's name in the configuration directory.
const FileName = "trust.json"

// Version is the format of the store this package reads and writes.
const Version = 1

// maxStoreSize bounds the store read: a larger file is not a trust store.
const maxStoreSize = 16 << 20

// ConfigDir is the user's celguard configuration directory:
// $XDG_CONFIG_HOME/celguard when XDG_CONFIG_HOME is an absolute path (the
// XDG specification ignores a relative one), else ~/.config/celguard. It
// holds the user's policies and the trust store.
func ConfigDir() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "celguard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory: %w", err)
	}
	return filepath.Join(home, ".config", "celguard"), nil
}

// DefaultPath is the trust store in ConfigDir.
func DefaultPath() (string, error) {
	dir, err := ConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, FileName), nil
}

// Root returns a project root as the store keys it: absolute, cleaned and
// with every symbolic link resolved, so that one directory has one key
// whatever path reached it.
func Root(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// File is one file of a trusted project layer: its slash path relative to
// the layer's directory and the SHA-256 of its content, in hex.
type File struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// digestPrefix starts every digest's input, naming the encoding, so that a
// future encoding cannot collide with this one.
const digestPrefix = "celguard trust digest v1\x00"

// Digest returns the digest of a project layer and its files, sorted by
// name. srcs are the files as the loader read them, named relative to the
// layer's directory. The digest is the SHA-256, written "sha256:<hex>", of
// a versioned prefix followed, for each file in name order, by the length of
// its name (8 bytes, big-endian), the name, the length of its content (8
// bytes, big-endian) and the content: an encoding in which no two different
// sets of files give the same input.
func Digest(srcs []policy.Source) (digest string, files []File) {
	srcs = slices.Clone(srcs)
	slices.SortFunc(srcs, func(a, b policy.Source) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	io.WriteString(h, digestPrefix)
	var n [8]byte
	for _, s := range srcs {
		binary.BigEndian.PutUint64(n[:], uint64(len(s.Name)))
		h.Write(n[:])
		io.WriteString(h, s.Name)
		binary.BigEndian.PutUint64(n[:], uint64(len(s.Data)))
		h.Write(n[:])
		h.Write(s.Data)
		sum := sha256.Sum256(s.Data)
		files = append(files, File{Name: s.Name, SHA256: hex.EncodeToString(sum[:])})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), files
}

// Entry is one trusted project.
type Entry struct {
	// Root is the project root, as Root returns it.
	Root string `json:"root"`
	// Digest is Digest of the project layer's files when it was trusted.
	Digest string `json:"digest"`
	// Files are the files the digest covers, to say what changed since.
	Files []File `json:"files"`
	// TrustedAt is when the user trusted it.
	TrustedAt time.Time `json:"trusted_at"`
}

// Store is the trust store at Path.
type Store struct {
	Path    string
	Entries []Entry
}

type storeFile struct {
	Version  int     `json:"version"`
	Projects []Entry `json:"projects"`
}

// Load reads the store at path. A missing file is an empty store. Any other
// problem is an error naming the file: a store that is not valid JSON of
// this format, of another version, with an entry whose root is not absolute
// and clean or whose digest is malformed, with a root twice, or, on
// platforms that say who owns a file, owned by another user or writable by
// group or others.
func Load(path string) (*Store, error) {
	s := &Store{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust store %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trust store %s: %w", path, unwrapPath(err))
	}
	if err := believable(fi); err != nil {
		return nil, fmt.Errorf("trust store %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStoreSize+1))
	if err != nil {
		return nil, fmt.Errorf("trust store %s: %w", path, unwrapPath(err))
	}
	if len(data) > maxStoreSize {
		return nil, fmt.Errorf("trust store %s: larger than %d bytes", path, maxStoreSize)
	}
	var sf storeFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sf); err != nil {
		return nil, fmt.Errorf("trust store %s: malformed: %v", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trust store %s: malformed: data after the JSON object", path)
	}
	if sf.Version != Version {
		return nil, fmt.Errorf("trust store %s: version %d, this celguard reads version %d", path, sf.Version, Version)
	}
	seen := map[string]bool{}
	for i, e := range sf.Projects {
		if err := e.valid(); err != nil {
			return nil, fmt.Errorf("trust store %s: malformed: project %d: %v", path, i+1, err)
		}
		if seen[e.Root] {
			return nil, fmt.Errorf("trust store %s: malformed: %s is listed twice", path, e.Root)
		}
		seen[e.Root] = true
	}
	s.Entries = sf.Projects
	return s, nil
}

// believable checks that the store is a regular file only its owner, the
// current user, can write.
func believable(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("writable by group or others (mode %04o); run chmod 600 on it", fi.Mode().Perm())
	}
	if uid, ok := fileowner.UID(fi); ok && uid != uint32(os.Getuid()) {
		return fmt.Errorf("owned by uid %d, not by you (uid %d)", uid, os.Getuid())
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (e Entry) valid() error {
	if e.Root == "" || !filepath.IsAbs(e.Root) || filepath.Clean(e.Root) != e.Root {
		return fmt.Errorf("root %q is not an absolute, clean path", e.Root)
	}
	hexDigest, ok := strings.CutPrefix(e.Digest, "sha256:")
	if b, err := hex.DecodeString(hexDigest); !ok || err != nil || len(b) != sha256.Size || strings.ToLower(hexDigest) != hexDigest {
		return fmt.Errorf("digest %q is not sha256:<64 lowercase hex digits>", e.Digest)
	}
	return nil
}

// Lookup returns the entry of root, a root as Root returns it.
func (s *Store) Lookup(root string) (Entry, bool) {
	for _, e := range s.Entries {
		if e.Root == root {
			return e, true
		}
	}
	return Entry{}, false
}

// Set adds e, replacing the entry of the same root.
func (s *Store) Set(e Entry) {
	s.Remove(e.Root)
	s.Entries = append(s.Entries, e)
	slices.SortFunc(s.Entries, func(a, b Entry) int { return strings.Compare(a.Root, b.Root) })
}

// Remove forgets root and reports whether it was there.
func (s *Store) Remove(root string) bool {
	n := len(s.Entries)
	s.Entries = slices.DeleteFunc(s.Entries, func(e Entry) bool { return e.Root == root })
	return len(s.Entries) != n
}

// Save writes the store atomically, mode 0600, creating its directory (mode
// 0700) when missing.
func (s *Store) Save() error {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return err
	}
	entries := s.Entries
	if entries == nil {
		entries = []Entry{}
	}
	data, err := json.MarshalIndent(storeFile{Version: Version, Projects: entries}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.Path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot write the trust store %s: %w", s.Path, err)
	}
	return nil
}

// Status is whether a project layer is trusted, and if not why.
type Status struct {
	Trusted bool
	// Reason says why the project is untrusted: not in the store, or what
	// changed since it was trusted. Empty when trusted.
	Reason string
	// Entry is the store's entry for the root, when there is one.
	Entry *Entry
}

// Check says whether the store trusts the project at root whose layer has
// digest and files (as Digest returns them).
func (s *Store) Check(root, digest string, files []File) Status {
	e, ok := s.Lookup(root)
	if !ok {
		return Status{Reason: "not in the trust store"}
	}
	if e.Digest == digest {
		return Status{Trusted: true, Entry: &e}
	}
	return Status{Reason: fmt.Sprintf("its .celguard/ files changed since it was trusted on %s (%s)",
		e.TrustedAt.UTC().Format(time.RFC3339), Changes(e.Files, files)), Entry: &e}
}

// Changes describes how the files now differ from the files then: "changed
// a.yaml; added b.yaml; removed c.yaml".
func Changes(then, now []File) string {
	old := map[string]string{}
	for _, f := range then {
		old[f.Name] = f.SHA256
	}
	var changed, added []string
	for _, f := range now {
		sum, ok := old[f.Name]
		switch {
		case !ok:
			added = append(added, f.Name)
		case sum != f.SHA256:
			changed = append(changed, f.Name)
		}
		delete(old, f.Name)
	}
	var removed []string
	for n := range old {
		removed = append(removed, n)
	}
	slices.Sort(removed)
	var parts []string
	for _, p := range []struct {
		verb  string
		names []string
	}{{"changed", changed}, {"added", added}, {"removed", removed}} {
		if len(p.names) > 0 {
			parts = append(parts, p.verb+" "+strings.Join(p.names, ", "))
		}
	}
	if len(parts) == 0 {
		return "the digest differs"
	}
	return strings.Join(parts, "; ")
}
