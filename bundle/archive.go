package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// The files of a bundle besides its policies and suites.
const (
	manifestFile = "manifest.json"
	lintFile     = "lint.json"
	proofsFile   = "proofs.json"
	// policiesDir holds the policy files and suites, as in the directory
	// the bundle was built from.
	policiesDir = "policies/"
)

// MediaType is the media type of a bundle archive (the OCI layer's).
const MediaType = "application/vnd.celguard.bundle.v1.tar+gzip"

// Limits bound what Read accepts; each is checked before the bytes it
// covers are decompressed or kept.
type Limits struct {
	// Archive is the most compressed bytes.
	Archive int64
	// File is the most bytes of one file.
	File int64
	// Total is the most bytes of all files together.
	Total int64
	// Files is the most files.
	Files int
}

// DefaultLimits are generous for a policy set (the whole built-in set is
// under 1 MiB) and small enough that a hostile archive cannot fill memory
// or a disk.
var DefaultLimits = Limits{Archive: 8 << 20, File: 4 << 20, Total: 32 << 20, Files: 4096}

// Bundle is a parsed bundle: its manifest, its files by path and the
// archive bytes they came from.
type Bundle struct {
	Manifest Manifest
	// Files holds every file but manifest.json, by archive path.
	Files map[string][]byte
	// Archive is the archive (what the signature's subject digest covers).
	Archive []byte
}

// ArchiveDigest is the hex SHA-256 of the archive.
func (b *Bundle) ArchiveDigest() string { return sha256Hex(b.Archive) }

func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// checkMember refuses a path a bundle never holds: anything but
// manifest.json, lint.json, proofs.json and .yaml or .yml files below
// policies/, written as a clean relative slash path.
func checkMember(name string) error {
	unsafe := func(why string) error { return errorf(CodeUnsafePath, "archive path %q: %s", name, why) }
	switch {
	case name == "" || len(name) > 512:
		return unsafe("empty or longer than 512 bytes")
	case strings.ContainsAny(name, "\\\x00:"):
		return unsafe("has a backslash, NUL or colon")
	case path.IsAbs(name) || path.Clean(name) != name:
		return unsafe("is not a clean relative path")
	case name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "/../"):
		return unsafe("climbs out with ..")
	case name == manifestFile || name == lintFile || name == proofsFile:
		return nil
	}
	rest, ok := strings.CutPrefix(name, policiesDir)
	if !ok || rest == "" {
		return unsafe("is not below " + policiesDir)
	}
	for _, el := range strings.Split(rest, "/") {
		if el == "" || el == "." || el == ".." || strings.HasPrefix(el, ".") {
			return unsafe("has an empty, dot or hidden element")
		}
	}
	if ext := path.Ext(name); ext != ".yaml" && ext != ".yml" {
		return unsafe("is not a .yaml or .yml file")
	}
	return nil
}

// Read parses a bundle archive within lim: the archive's size is checked
// first, each file's size from its header before its bytes are read, and
// their sum and count as they come. Every file must be a regular file at
// a path checkMember allows, listed in the manifest with its size and
// SHA-256, and the manifest's digest must be the policies' compile.Digest.
// Read checks no signature: Verify does.
func Read(archive []byte, lim Limits) (*Bundle, error) {
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	if int64(len(archive)) > lim.Archive {
		return nil, errorf(CodeTooLarge, "archive is %d bytes, over the limit of %d", len(archive), lim.Archive)
	}
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, wrap(CodeMalformed, err, "not a gzip stream")
	}
	zr.Multistream(false)
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var manifest []byte
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, wrap(CodeMalformed, err, "reading the tar stream")
		}
		if err := checkMember(hdr.Name); err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, errorf(CodeMalformed, "%s is not a regular file (type %q)", hdr.Name, hdr.Typeflag)
		}
		if _, dup := files[hdr.Name]; dup || (hdr.Name == manifestFile && manifest != nil) {
			return nil, errorf(CodeMalformed, "%s appears twice", hdr.Name)
		}
		if len(files)+1 > lim.Files {
			return nil, errorf(CodeTooLarge, "more than %d files", lim.Files)
		}
		if hdr.Size < 0 || hdr.Size > lim.File {
			return nil, errorf(CodeTooLarge, "%s is %d bytes, over the limit of %d", hdr.Name, hdr.Size, lim.File)
		}
		if total += hdr.Size; total > lim.Total {
			return nil, errorf(CodeTooLarge, "the files are over the limit of %d bytes together", lim.Total)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil || int64(len(data)) != hdr.Size {
			return nil, wrap(CodeMalformed, err, "%s is truncated", hdr.Name)
		}
		if hdr.Name == manifestFile {
			manifest = data
			continue
		}
		files[hdr.Name] = data
	}
	// Padding after the tar's end is read, within a bound, so that the
	// gzip stream's checksum is checked.
	if n, err := io.Copy(io.Discard, io.LimitReader(zr, 1<<20)); err != nil {
		return nil, wrap(CodeMalformed, err, "the gzip stream")
	} else if n >= 1<<20 {
		return nil, errorf(CodeTooLarge, "over 1 MiB of data after the tar stream")
	}
	if manifest == nil {
		return nil, errorf(CodeMalformed, "no %s", manifestFile)
	}
	m, err := ParseManifest(manifest)
	if err != nil {
		return nil, err
	}
	if len(m.Files) != len(files) {
		return nil, errorf(CodeMalformed, "the manifest lists %d files, the archive holds %d", len(m.Files), len(files))
	}
	for _, f := range m.Files {
		data, ok := files[f.Path]
		if !ok {
			return nil, errorf(CodeMalformed, "%s is listed in the manifest but missing", f.Path)
		}
		if int64(len(data)) != f.Size || sha256Hex(data) != f.SHA256 {
			return nil, errorf(CodeMalformed, "%s does not match its size and sha256 in the manifest", f.Path)
		}
	}
	b := &Bundle{Manifest: *m, Files: files, Archive: archive}
	if d := compile.Digest(b.Sources()); d != m.Digest {
		return nil, errorf(CodeMalformed, "the policies' digest is %s, the manifest says %s", d, m.Digest)
	}
	return b, nil
}

// Sources returns the bundle's policy files (not its suites) as sources of
// the layer it is meant for, named bundle:NAME/PATH (PATH relative to the
// directory it was built from), in path order.
func (b *Bundle) Sources() []policy.Source {
	return sourcesOf(b.Manifest.Name, b.Manifest.PolicyLayer(), b.Files)
}

func sourcesOf(name string, layer policy.Layer, files map[string][]byte) []policy.Source {
	// policy.LoadFS decides which files are policies, as it does for a
	// directory on disk (skipping suites, _ and . names and testdata).
	srcs, err := policy.LoadFS(policyFS(files), ".", "bundle:"+name)
	if err != nil {
		return nil // a MapFS read cannot fail
	}
	for i := range srcs {
		srcs[i].Layer = layer
	}
	return srcs
}

// Suites returns the bundle's test suites, by path relative to the
// directory it was built from.
func (b *Bundle) Suites() map[string][]byte {
	out := map[string][]byte{}
	for p, data := range b.Files {
		if rel, ok := strings.CutPrefix(p, policiesDir); ok && policy.IsTestFile(rel) {
			out[rel] = data
		}
	}
	return out
}

// writeArchive writes m and files as a deterministic archive: sorted
// paths, the build time as every file's time, no owner, mode 0644.
func writeArchive(m *Manifest, files map[string][]byte) ([]byte, error) {
	mdata, err := marshalManifest(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: m.Created.UTC().Truncate(time.Second), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(manifestFile, mdata); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := add(n, files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func marshalManifest(m *Manifest) ([]byte, error) {
	data, err := jsonIndent(m)
	if err != nil {
		return nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	return data, nil
}

// Unpack writes the bundle's files (manifest.json among them) into dir,
// which must not exist yet or be empty. Every write goes through an
// os.Root opened on dir, so no path, link or race can put a file outside
// it; paths were checked by Read already.
func Unpack(b *Bundle, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return err
	} else if len(ents) > 0 {
		return fmt.Errorf("unpack: %s is not empty", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	mdata, err := marshalManifest(&b.Manifest)
	if err != nil {
		return err
	}
	all := map[string][]byte{manifestFile: mdata}
	for p, d := range b.Files {
		all[p] = d
	}
	for p, data := range all {
		if err := checkMember(p); err != nil {
			return err
		}
		if d := path.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	return nil
}
