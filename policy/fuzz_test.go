package policy_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/celguard/celguard/policy"
)

// seedPolicies returns policy files to seed the fuzzers: the example of the
// specification, every policy section of the golden diagnostics fixtures and
// every inline policy of the conformance cases.
func seedPolicies(tb testing.TB, root string) [][]byte {
	tb.Helper()
	var out [][]byte
	if b, err := os.ReadFile(filepath.Join(root, "policy/testdata/example.yaml")); err == nil {
		out = append(out, b)
	}
	fixtures, _ := filepath.Glob(filepath.Join(root, "compile/testdata/diagnostics/*.txtar"))
	for _, p := range fixtures {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name != "want.diag" {
				out = append(out, f.Data)
			}
		}
	}
	_ = filepath.WalkDir(filepath.Join(root, "conformance/cases"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var doc any
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for dec.Decode(&doc) == nil {
			collectPolicies(doc, false, &out)
		}
		return nil
	})
	return out
}

// collectPolicies gathers the strings found under a "policies" key.
func collectPolicies(v any, under bool, out *[][]byte) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			collectPolicies(c, under || k == "policies", out)
		}
	case []any:
		for _, c := range v {
			collectPolicies(c, under, out)
		}
	case string:
		if under {
			*out = append(*out, []byte(v))
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range seedPolicies(f, "..") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		p, ds := policy.Parse("fuzz.yaml", src)
		if p == nil && !ds.HasErrors() {
			t.Fatalf("got no policy and no error")
		}
		lines := strings.Count(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n") + 1
		for _, d := range ds {
			if d.Pos.File != "fuzz.yaml" || d.Pos.Line < 1 || d.Pos.Line > lines || d.Pos.Col < 0 {
				t.Fatalf("diagnostic at %s outside the file of %d lines: %v", d.Pos, lines, d)
			}
			if d.Code == "" || d.Severity != policy.SeverityError {
				t.Fatalf("diagnostic without code or error severity: %#v", d)
			}
		}
		_ = policy.WriteText(io.Discard, ds, policy.LinesOf([]policy.Source{{Name: "fuzz.yaml", Data: src}}))
		if p == nil {
			return
		}
		// Every expression maps each of its characters into the file.
		check := func(e *policy.Expr) {
			if e == nil || e.Text == "" { // absent, or not read (reported)
				return
			}
			n := len([]rune(e.Text))
			for i := -1; i <= n+1; i++ {
				pos := e.PosOffset(i)
				if pos.Line < 1 || pos.Line > lines || pos.Col < 1 {
					t.Fatalf("PosOffset(%d) of %q = %s, outside the file of %d lines", i, e.Text, pos, lines)
				}
			}
			_ = e.PosAt(strings.Count(e.Text, "\n")+2, 3)
		}
		for i := range p.Variables {
			check(&p.Variables[i].Expr)
		}
		for i := range p.Counters {
			c := &p.Counters[i]
			check(c.Key)
			check(c.ResetWhen)
			check(&c.IncrementWhen)
		}
		for i := range p.Rules {
			r := &p.Rules[i]
			check(r.Condition)
			check(r.Message)
			if m := r.Modify; m != nil {
				check(m.Args)
				check(m.Content)
				for j := range m.Set {
					check(&m.Set[j].Expr)
				}
			}
		}
	})
}

// FuzzParseMaskPath: a decision_log.mask path either fails or reads back
// as keys of letters, digits, _ and -, or *, that join to the input.
func FuzzParseMaskPath(f *testing.F) {
	for _, s := range []string{"content", "env.*", "files.*.content", "a..b", ".x", "x.", "*", "a b", "é", "a.*.*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := policy.ParseMaskPath(s)
		if err != nil {
			return
		}
		if strings.Join(segs, ".") != s {
			t.Fatalf("%q read as %q", s, segs)
		}
		for _, seg := range segs {
			if seg == "" || (seg != "*" && strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "") {
				t.Fatalf("%q has the key %q", s, seg)
			}
		}
	})
}
