package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/policy"
)

var created = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func buildTeam(t testing.TB, serial uint64) *Bundle {
	t.Helper()
	b, err := Build(context.Background(), "testdata/team", BuildOptions{Name: "team", Version: "v1", Serial: serial, Layer: "admin", Created: created, CelguardVersion: "test"})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func TestBuild(t *testing.T) {
	b := buildTeam(t, 3)
	m := b.Manifest
	if m.Name != "team" || m.Serial != 3 || m.Layer != "admin" || m.CelguardVersion != "test" || !m.Created.Equal(created) {
		t.Errorf("manifest = %+v", m)
	}
	if m.Tests.Suites != 1 || m.Tests.Cases != 2 {
		t.Errorf("tests = %+v, want 1 suite, 2 cases", m.Tests)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	if got, want := strings.Join(paths, " "), "lint.json policies/no-rm.yaml policies/no-rm_test.yaml proofs.json"; got != want {
		t.Errorf("files = %s, want %s (hidden directories skipped)", got, want)
	}
	srcs := b.Sources()
	if len(srcs) != 1 || srcs[0].Name != "bundle:team/no-rm.yaml" || srcs[0].Layer != policy.LayerAdmin {
		t.Errorf("sources = %+v", srcs)
	}
	if !strings.Contains(string(b.Files[proofsFile]), `"rule": "no-rm-root-or-home"`) {
		t.Errorf("proofs.json has no proof of the rule:\n%s", b.Files[proofsFile])
	}
	if len(b.Suites()) != 1 {
		t.Errorf("suites = %v", b.Suites())
	}
	// Deterministic: the same directory and options give the same bytes.
	if again := buildTeam(t, 3); !bytes.Equal(again.Archive, b.Archive) {
		t.Error("two builds of the same set differ")
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		o    BuildOptions
		code Code
	}{
		{"testdata/broken", BuildOptions{Name: "x", Version: "v1", Serial: 1, Layer: "user"}, CodeLint},
		{"testdata/failing", BuildOptions{Name: "x", Version: "v1", Serial: 1, Layer: "user"}, CodeTests},
		{"testdata/team", BuildOptions{Name: "X!", Version: "v1", Serial: 1, Layer: "user"}, CodeManifest},
		{"testdata/team", BuildOptions{Name: "x", Version: "v1", Serial: 0, Layer: "user"}, CodeManifest},
		{"testdata/team", BuildOptions{Name: "x", Version: "v1", Serial: 1, Layer: "project"}, CodeManifest},
		{"testdata/team", BuildOptions{Name: "x", Version: "v1", Serial: 1, Layer: "user", Limits: Limits{Archive: 1 << 20, File: 100, Total: 1 << 20, Files: 10}}, CodeTooLarge},
	} {
		_, err := Build(context.Background(), tc.dir, tc.o)
		if CodeOf(err) != tc.code {
			t.Errorf("Build(%s, %+v) = %v, want code %s", tc.dir, tc.o, err, tc.code)
		}
	}
	_, err := Build(context.Background(), "testdata/broken", BuildOptions{Name: "x", Version: "v1", Serial: 1, Layer: "user"})
	var be *BuildError
	if !errors.As(err, &be) || len(be.Diagnostics) == 0 || !strings.Contains(be.Diagnostics[0].Pos.String(), "no-rm.yaml") {
		t.Errorf("lint refusal carries no positioned diagnostics: %v", err)
	}
}

// archiveOf writes a tar.gz of entries, in order, as a hostile or broken
// archive would be.
func archiveOf(t testing.TB, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("a"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestReadRefuses(t *testing.T) {
	good := buildTeam(t, 1)
	tampered := bytes.Clone(good.Archive)
	tampered[len(tampered)/2] ^= 0xff
	lim := Limits{Archive: 1 << 20, File: 1 << 10, Total: 4 << 10, Files: 8}
	for name, tc := range map[string]struct {
		data []byte
		code Code
	}{
		"not gzip":        {[]byte("hello"), CodeMalformed},
		"tampered":        {tampered, CodeMalformed},
		"too large":       {append(bytes.Clone(good.Archive), 0), CodeTooLarge},
		"dotdot":          {archiveOf(t, &tar.Header{Name: "policies/../../etc/passwd.yaml", Size: 1}), CodeUnsafePath},
		"absolute":        {archiveOf(t, &tar.Header{Name: "/etc/x.yaml", Size: 1}), CodeUnsafePath},
		"outside":         {archiveOf(t, &tar.Header{Name: "other/x.yaml", Size: 1}), CodeUnsafePath},
		"not yaml":        {archiveOf(t, &tar.Header{Name: "policies/x.sh", Size: 1}), CodeUnsafePath},
		"hidden":          {archiveOf(t, &tar.Header{Name: "policies/.x/y.yaml", Size: 1}), CodeUnsafePath},
		"backslash":       {archiveOf(t, &tar.Header{Name: `policies\..\x.yaml`, Size: 1}), CodeUnsafePath},
		"symlink":         {archiveOf(t, &tar.Header{Name: "policies/x.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), CodeMalformed},
		"hardlink":        {archiveOf(t, &tar.Header{Name: "policies/x.yaml", Typeflag: tar.TypeLink, Linkname: "manifest.json"}), CodeMalformed},
		"directory":       {archiveOf(t, &tar.Header{Name: "policies/x.yaml", Typeflag: tar.TypeDir}), CodeMalformed},
		"file over limit": {archiveOf(t, &tar.Header{Name: "policies/x.yaml", Size: 2 << 10}), CodeTooLarge},
		"total over limit": {archiveOf(t, &tar.Header{Name: "policies/a.yaml", Size: 1 << 10}, &tar.Header{Name: "policies/b.yaml", Size: 1 << 10},
			&tar.Header{Name: "policies/c.yaml", Size: 1 << 10}, &tar.Header{Name: "policies/d.yaml", Size: 1 << 10}, &tar.Header{Name: "policies/e.yaml", Size: 1 << 10}), CodeTooLarge},
		"duplicate":    {archiveOf(t, &tar.Header{Name: "policies/a.yaml", Size: 1}, &tar.Header{Name: "policies/a.yaml", Size: 1}), CodeMalformed},
		"no manifest":  {archiveOf(t, &tar.Header{Name: "policies/a.yaml", Size: 1}), CodeMalformed},
		"bad manifest": {archiveOf(t, &tar.Header{Name: "manifest.json", Size: 3}), CodeManifest},
	} {
		l := lim
		switch name {
		case "tampered":
			l = Limits{}
		case "too large":
			l = DefaultLimits
			l.Archive = int64(len(good.Archive))
		}
		if _, err := Read(tc.data, l); CodeOf(err) != tc.code {
			t.Errorf("%s: Read = %v, want code %s", name, err, tc.code)
		}
	}
	many := make([]*tar.Header, 9)
	for i := range many {
		many[i] = &tar.Header{Name: "policies/" + string(rune('a'+i)) + ".yaml"}
	}
	if _, err := Read(archiveOf(t, many...), lim); CodeOf(err) != CodeTooLarge {
		t.Errorf("9 files over a limit of 8: %v", err)
	}
}

// TestReadChecksManifest: a file changed, added or dropped after the build
// is refused even when the archive is well formed.
func TestReadChecksManifest(t *testing.T) {
	b := buildTeam(t, 1)
	for name, mutate := range map[string]func(files map[string][]byte){
		"changed": func(f map[string][]byte) { f["policies/no-rm.yaml"] = append(f["policies/no-rm.yaml"], '#') },
		"added":   func(f map[string][]byte) { f["policies/extra.yaml"] = []byte("x") },
		"dropped": func(f map[string][]byte) { delete(f, "policies/no-rm_test.yaml") },
	} {
		files := map[string][]byte{}
		for p, d := range b.Files {
			files[p] = bytes.Clone(d)
		}
		mutate(files)
		data, err := writeArchive(&b.Manifest, files)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Read(data, Limits{}); CodeOf(err) != CodeMalformed {
			t.Errorf("%s: Read = %v, want %s", name, err, CodeMalformed)
		}
	}
	// The manifest's digest must be the policies'.
	m := b.Manifest
	m.Digest = "sha256:" + strings.Repeat("0", 64)
	data, _ := writeArchive(&m, b.Files)
	if _, err := Read(data, Limits{}); CodeOf(err) != CodeMalformed {
		t.Errorf("wrong digest: Read = %v", err)
	}
}

func TestUnpack(t *testing.T) {
	b := buildTeam(t, 1)
	dir := filepath.Join(t.TempDir(), "out")
	if err := Unpack(b, dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "policies", "no-rm.yaml"))
	if err != nil || !bytes.Equal(got, b.Files["policies/no-rm.yaml"]) {
		t.Errorf("unpacked policy = %q, %v", got, err)
	}
	if _, err := ParseManifest(must(os.ReadFile(filepath.Join(dir, "manifest.json")))); err != nil {
		t.Errorf("unpacked manifest: %v", err)
	}
	if err := Unpack(b, dir); err == nil {
		t.Error("Unpack into a directory that is not empty succeeded")
	}
	// A path that escapes is refused even if a Bundle were built by hand.
	evil := &Bundle{Manifest: b.Manifest, Files: map[string][]byte{"policies/../../escape.yaml": []byte("x")}}
	out := filepath.Join(t.TempDir(), "a", "b")
	if err := Unpack(evil, out); CodeOf(err) != CodeUnsafePath {
		t.Errorf("Unpack of an escaping path = %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "..", "..", "escape.yaml")); !os.IsNotExist(err) {
		t.Errorf("a file escaped the unpack directory: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestParseManifest(t *testing.T) {
	good := buildTeam(t, 1).Manifest
	data := must(marshalManifest(&good))
	if _, err := ParseManifest(data); err != nil {
		t.Fatalf("good manifest: %v", err)
	}
	for name, in := range map[string]string{
		"unknown field": strings.Replace(string(data), `"schema"`, `"extra": 1, "schema"`, 1),
		"other schema":  strings.Replace(string(data), Schema, "celguard.bundle/v9", 1),
		"two documents": string(data) + "{}",
		"not json":      "{",
		"serial 0":      strings.Replace(string(data), `"serial": 1`, `"serial": 0`, 1),
		"huge serial":   strings.Replace(string(data), `"serial": 1`, `"serial": 18014398509481984`, 1),
		"bad layer":     strings.Replace(string(data), `"layer": "admin"`, `"layer": "builtin"`, 1),
		"escaping file": strings.Replace(string(data), `"path": "policies/no-rm.yaml"`, `"path": "../no-rm.yaml"`, 1),
	} {
		if _, err := ParseManifest([]byte(in)); err == nil {
			t.Errorf("%s: ParseManifest accepted it", name)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(buildTeam(f, 1).Archive)
	f.Add(archiveOf(f, &tar.Header{Name: "policies/../x.yaml", Size: 1}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Read(data, Limits{Archive: 1 << 20, File: 64 << 10, Total: 256 << 10, Files: 64})
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		for p := range b.Files {
			if checkMember(p) != nil {
				t.Fatalf("Read accepted %q", p)
			}
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	good := buildTeam(f, 1).Manifest
	f.Add(must(marshalManifest(&good)))
	f.Add([]byte(`{"schema":"celguard.bundle/v1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if CodeOf(err) != CodeManifest && CodeOf(err) != CodeUnsafePath {
				t.Fatalf("error with code %q: %v", CodeOf(err), err)
			}
			return
		}
		if m.Validate() != nil || m.Serial == 0 || !ValidName(m.Name) {
			t.Fatalf("ParseManifest accepted an invalid manifest: %+v", m)
		}
	})
}
