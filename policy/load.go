package policy

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Source is the text of one policy file and the name diagnostics use for it.
type Source struct {
	Name string
	Data []byte
	// Layer is where the file comes from; higher layers win collisions.
	Layer Layer
	// Untrusted marks a file of a project layer the user has not trusted
	// (celguard trust): its policies can only make a decision stricter,
	// never lift one, and its Overrides and replacements of other layers'
	// policies and rules are ignored (docs/layers.md).
	Untrusted bool
	// Bundle names the signed policy bundle the source came from, as
	// NAME@VERSION/serial-N (package bundle); empty for a file on disk.
	// Decisions of a set carry the bundles of its sources
	// (eval.Decision.Bundles).
	Bundle string
}

// IsPolicyFile reports whether a file name is read as a policy: a .yaml or
// .yml file that is not a test suite (*_test.yaml) and does not start with _.
func IsPolicyFile(name string) bool {
	base := path.Base(filepath.ToSlash(name))
	ext := path.Ext(base)
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	if strings.HasPrefix(base, "_") || strings.HasPrefix(base, ".") {
		return false
	}
	return !IsTestFile(base)
}

// IsTestFile reports whether a file name is a policy test suite (*_test.yaml).
func IsTestFile(name string) bool {
	base := path.Base(filepath.ToSlash(name))
	return strings.HasSuffix(base, "_test.yaml") || strings.HasSuffix(base, "_test.yml")
}

// LoadFS reads every policy file below root in fsys, in path order. Names are
// the slash paths inside fsys, prefixed by prefix when it is not empty.
func LoadFS(fsys fs.FS, root, prefix string) ([]Source, error) {
	var out []Source
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
				return fs.SkipDir
			}
			return nil
		}
		if !IsPolicyFile(p) {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := p
		if prefix != "" {
			name = path.Join(prefix, p)
		}
		out = append(out, Source{Name: name, Data: b})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// LoadPaths reads policy files and directories from disk. A file named
// explicitly is read even if its name would be skipped in a directory walk
// (except test suites); a directory is walked with LoadFS's rules. Sources
// keep the order of paths, each directory's files in path order.
func LoadPaths(paths ...string) ([]Source, error) {
	var out []Source
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if IsTestFile(p) {
				return nil, fmt.Errorf("%s is a test suite, not a policy; run it with celguard test", p)
			}
			b, err := readFile(p)
			if err != nil {
				return nil, err
			}
			out = append(out, Source{Name: filepath.ToSlash(p), Data: b})
			continue
		}
		srcs, err := LoadFS(os.DirFS(p), ".", filepath.ToSlash(p))
		if err != nil {
			return nil, err
		}
		out = append(out, srcs...)
	}
	return out, nil
}

func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s: policy files are limited to %d bytes", p, MaxFileSize)
	}
	return b, nil
}
