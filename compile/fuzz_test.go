package compile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// fuzzSeeds are the policy sections of the golden fixtures, the example of
// the specification and the inline policies of the conformance cases.
func fuzzSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	if b, err := os.ReadFile("../policy/testdata/example.yaml"); err == nil {
		out = append(out, b)
	}
	paths, _ := filepath.Glob("testdata/diagnostics/*.txtar")
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name != wantSection {
				out = append(out, f.Data)
			}
		}
	}
	_ = filepath.WalkDir("../conformance/cases", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var doc map[string]any
		if yaml.Unmarshal(b, &doc) != nil {
			return nil
		}
		var walk func(v any, under bool)
		walk = func(v any, under bool) {
			switch v := v.(type) {
			case map[string]any:
				for k, c := range v {
					walk(c, under || k == "policies")
				}
			case []any:
				for _, c := range v {
					walk(c, under)
				}
			case string:
				if under {
					out = append(out, []byte(v))
				}
			}
		}
		walk(doc, false)
		return nil
	})
	return out
}

func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		srcs := []policy.Source{{Name: "fuzz.yaml", Data: src}}
		set, ds, err := compile.Check(srcs)
		if err != nil {
			t.Fatalf("Check: got option error %v", err)
		}
		if set == nil && !ds.HasErrors() {
			t.Fatalf("got no set and no error")
		}
		if set != nil && ds.HasErrors() {
			t.Fatalf("got a set and errors %v", ds)
		}
		lines := strings.Count(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n") + 1
		for _, d := range ds {
			if d.Pos.File != "fuzz.yaml" || d.Pos.Line < 1 || d.Pos.Line > lines || d.Pos.Col < 0 {
				t.Fatalf("diagnostic at %s outside the file of %d lines: %v", d.Pos, lines, d)
			}
		}
		if set != nil {
			for _, tool := range []string{"Bash", "Write", "mcp__x", ""} {
				_ = set.Candidates(policy.PhaseBefore, tool)
				_ = set.Candidates(policy.PhaseAfter, tool)
			}
		}
	})
}
