package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"strings"
	"testing/fstest"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// BuildOptions say what to build.
type BuildOptions struct {
	Name    string
	Version string
	Serial  uint64
	// Layer is user or admin.
	Layer string
	// Created is the build time (default: now).
	Created time.Time
	// CelguardVersion is the building celguard's version (default: devel).
	CelguardVersion string
	// Limits bound the bundle (default: DefaultLimits); build refuses to
	// make one that Read would refuse.
	Limits Limits
}

// BuildError is what Build refuses a set for: its lint diagnostics at
// error severity (CodeLint) or its failed suites (CodeTests).
type BuildError struct {
	Err         *Error
	Diagnostics policy.Diagnostics
	Report      *policytest.Report
}

func (e *BuildError) Error() string { return e.Err.Error() }

// Unwrap returns the bundle Error (CodeOf finds its code).
func (e *BuildError) Unwrap() error { return e.Err }

// Proof is the cost proof of one rule's condition: the compiler proved its
// worst-case cost within the limit for inputs up to FastUpTo elements or
// bytes (Bound is that cost), so it runs without cost accounting up to
// there. NoAccounting means it never needs any.
type Proof struct {
	Rule         string `json:"rule"`
	Policy       string `json:"policy"`
	File         string `json:"file"`
	NoAccounting bool   `json:"no_accounting,omitempty"`
	FastUpTo     uint64 `json:"fast_up_to,omitempty"`
	Bound        uint64 `json:"bound,omitempty"`
}

// Build makes a bundle of the policy set in dir: every .yaml and .yml file
// below it (policies, suites and what they read), skipping hidden
// directories. It compiles and lints the policies as they will be loaded
// (in the layer meant, with the built-in tool classes) and refuses the set
// when a diagnostic is at error severity (unless suppressed, as celguard
// lint --fail-on error does); it runs every suite and refuses the set when
// one fails. The lint result (warnings and info) and the cost proofs go
// into the bundle beside the files.
func Build(ctx context.Context, dir string, o BuildOptions) (*Bundle, error) {
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	o.Created = o.Created.UTC().Truncate(time.Second)
	if o.CelguardVersion == "" {
		o.CelguardVersion = "devel"
	}
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	layer, err := layerOf(o.Layer)
	if err != nil {
		return nil, errorf(CodeManifest, "%v", err)
	}
	files, err := readTree(dir, o.Limits)
	if err != nil {
		return nil, err
	}
	srcs := sourcesOf(o.Name, layer, files)
	if len(srcs) == 0 {
		return nil, errorf(CodeManifest, "%s holds no policy file", dir)
	}
	set, ds, err := compile.Check(append(srcs, policies.ToolClasses()))
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	ds = ds.Unsuppressed()
	ds.Sort()
	if errs := ds.Errors(); len(errs) > 0 || set == nil {
		return nil, &BuildError{Err: errorf(CodeLint, "the set does not lint clean at --fail-on error: %d errors", len(errs)), Diagnostics: errs}
	}
	rep, err := policytest.RunFS(ctx, os.DirFS(dir), ".", policytest.Options{Extra: []policy.Source{policies.ToolClasses()}, Layer: layer})
	if err != nil {
		return nil, fmt.Errorf("bundle: running the suites: %w", err)
	}
	if !rep.OK() {
		return nil, &BuildError{Err: errorf(CodeTests, "%d of %d test cases failed", rep.Failed, rep.Passed+rep.Failed), Report: rep}
	}
	m := Manifest{Schema: Schema, Name: o.Name, Version: o.Version, Serial: o.Serial, Created: o.Created,
		CelguardVersion: o.CelguardVersion, Digest: compile.Digest(srcs), Layer: o.Layer,
		Tests: TestSummary{Suites: len(rep.Suites), Cases: rep.Passed}}
	for _, d := range ds {
		switch d.Severity {
		case policy.SeverityWarning:
			m.Lint.Warnings++
		case policy.SeverityInfo:
			m.Lint.Info++
		}
	}
	if ds == nil {
		ds = policy.Diagnostics{}
	}
	if files[lintFile], err = jsonIndent(ds); err != nil {
		return nil, err
	}
	if files[proofsFile], err = jsonIndent(proofsOf(set)); err != nil {
		return nil, err
	}
	for p, data := range files {
		m.Files = append(m.Files, File{Path: p, Size: int64(len(data)), SHA256: sha256Hex(data)})
	}
	sortFiles(m.Files)
	if err := m.Validate(); err != nil {
		return nil, err
	}
	archive, err := writeArchive(&m, files)
	if err != nil {
		return nil, fmt.Errorf("bundle: writing the archive: %w", err)
	}
	// What is built must read back: the same checks a machine runs.
	return Read(archive, o.Limits)
}

// proofsOf lists the cost proof of every rule condition of the bundle's
// own policies (not the tool classes').
func proofsOf(set *compile.PolicySet) []Proof {
	out := []Proof{}
	for _, r := range set.Rules() {
		if r.Condition == nil || r.Policy == nil || !strings.HasPrefix(r.Policy.File, "bundle:") {
			continue
		}
		p := Proof{Rule: r.ID, Policy: r.Policy.Name, File: r.Policy.File}
		n, bound := r.Condition.FastUpTo()
		if n == math.MaxUint64 {
			p.NoAccounting = true
		} else {
			p.FastUpTo, p.Bound = n, bound
		}
		out = append(out, p)
	}
	return out
}

// readTree reads every .yaml and .yml file below dir (not in hidden
// directories), by archive path, within lim.
func readTree(dir string, lim Limits) (map[string][]byte, error) {
	files := map[string][]byte{}
	var total int64
	fsys := os.DirFS(dir)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if ext := path.Ext(p); (ext != ".yaml" && ext != ".yml") || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		if !d.Type().IsRegular() {
			return errorf(CodeUnsafePath, "%s is not a regular file", p)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if int64(len(data)) > lim.File {
			return errorf(CodeTooLarge, "%s is %d bytes, over the limit of %d", p, len(data), lim.File)
		}
		if total += int64(len(data)); total > lim.Total {
			return errorf(CodeTooLarge, "the files are over the limit of %d bytes together", lim.Total)
		}
		name := policiesDir + p
		if err := checkMember(name); err != nil {
			return err
		}
		files[name] = data
		if len(files)+3 > lim.Files {
			return errorf(CodeTooLarge, "more than %d files", lim.Files)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func sortFiles(fs []File) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].Path < fs[j-1].Path; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// policyFS is files below policies/ as an fs.FS rooted there.
func policyFS(files map[string][]byte) fs.FS {
	m := fstest.MapFS{}
	for p, data := range files {
		if rel, ok := strings.CutPrefix(p, policiesDir); ok {
			m[rel] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
	}
	return m
}
