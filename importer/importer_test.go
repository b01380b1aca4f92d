package importer_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sources reads every file of testdata/FORMAT, in name order.
func sources(t *testing.T, format string) []importer.File {
	t.Helper()
	dir := filepath.Join("testdata", string(format))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []importer.File
	for _, e := range entries {
		if e.IsDir() || strings.Contains(e.Name(), ".golden") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, importer.File{Name: filepath.ToSlash(filepath.Join(dir, e.Name())), Data: b})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files
}

// runSuite runs a generated suite against its generated policy and fails
// on any failing case.
func runSuite(t *testing.T, res *importer.Result) {
	t.Helper()
	fsys := fstest.MapFS{
		"imported.yaml":      {Data: res.Policy},
		"imported_test.yaml": {Data: res.Suite},
	}
	rep, err := policytest.RunFS(context.Background(), fsys, ".", policytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range rep.Suites {
		if s.Error != "" {
			t.Fatalf("suite %s: %s\npolicy:\n%s", s.File, s.Error, res.Policy)
		}
		for _, c := range s.Cases {
			n++
			if !c.Pass {
				t.Errorf("case %q: %s", c.Name, strings.Join(c.Failures, "; "))
			}
		}
	}
	if n == 0 && !bytes.Contains(res.Policy, []byte("rules: []")) {
		t.Fatal("the generated suite has no case")
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the import (run go test -update and review the diff):\n%s", path, got)
	}
}

func TestImportGolden(t *testing.T) {
	for _, f := range importer.Formats() {
		t.Run(string(f), func(t *testing.T) {
			files := sources(t, string(f))
			res, err := importer.Import(f, files, importer.Options{PolicyFile: "imported.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			again, err := importer.Import(f, files, importer.Options{PolicyFile: "imported.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Policy, again.Policy) || !bytes.Equal(res.Suite, again.Suite) {
				t.Fatal("two imports of the same sources differ")
			}
			for _, src := range files {
				if !bytes.Contains(res.Policy, []byte(src.Name+" sha256:")) {
					t.Errorf("the header does not name %s with its digest", src.Name)
				}
			}
			var notes strings.Builder
			for _, d := range res.Notes {
				notes.WriteString(d.Pos.String() + ": " + string(d.Severity) + ": " + string(d.Code) + ": " + d.Message + "\n")
			}
			dir := filepath.Join("testdata", string(f))
			golden(t, filepath.Join(dir, "policy.golden.yaml"), res.Policy)
			golden(t, filepath.Join(dir, "suite.golden.yaml"), res.Suite)
			golden(t, filepath.Join(dir, "notes.golden.txt"), []byte(notes.String()))
			runSuite(t, res)
		})
	}
}

// TestImportErrors pins the positioned refusals.
func TestImportErrors(t *testing.T) {
	for _, tc := range []struct {
		format importer.Format
		name   string
		src    string
		want   string // file:line:col: code
	}{
		{importer.Codex, "x.rules", "prefix_rule(pattern = [\"ls\"],\n  decision = \"maybe\")\n", "x.rules:1:12: import_invalid"},
		{importer.Codex, "x.rules", "prefix_rule(pattern = [])\n", "x.rules:1:12: import_invalid"},
		{importer.Codex, "x.rules", "\n\nprefix_rule(pattern = [\"ls\"], match = [\"cat x\"])\n", "x.rules:3:12: import_invalid"},
		{importer.Codex, "x.rules", "prefix_rule(pattern = [\"ls\"], not_match = [\"ls -l\"])\n", "x.rules:1:12: import_invalid"},
		{importer.Codex, "x.rules", "prefix_rule(pattern = [\"ls\"]\n", "x.rules:2:1: import_syntax"},
		{importer.Codex, "x.rules", "prefix_rule(pattern = [\"ls\"], bogus = 1)\n", "x.rules:1:12: import_syntax"},
		{importer.Codex, "x.rules", "network_rule(host = \"x.io\", protocol = \"https\", decision = \"deny\")\n", "x.rules:1:13: import_unsupported"},
		{importer.Codex, "x.rules", "prefix_rule(pattern = [\"ls\"], canonical_matching = True)\n", "x.rules:1:12: import_unsupported"},
		{importer.Codex, "x.rules", "def f():\n    f()\nf()\n", "x.rules:2:5: import_syntax"},
		{importer.Codex, "x.rules", "load(\"x.star\", \"y\")\n", "x.rules:1:1: import_syntax"},
		{importer.Claude, "s.json", "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\",\n  3]}}\n", "s.json:3:3: import_invalid"},
		{importer.Claude, "s.json", "{\n  \"permissions\": {\"deny\": \"Bash\"}}\n", "s.json:2:27: import_invalid"},
		{importer.Claude, "s.json", "{\n  \"permissions\": {\"deny\": [\"(x)\"]}}\n", "s.json:2:28: import_invalid"},
		{importer.Claude, "s.json", "{\n  \"permissions\": {\"deny\": [\"x\"],}}\n", "s.json:2:33: import_syntax"},
		{importer.Gemini, "p.toml", "[[rule]]\ntoolName = \"x\"\ndecision = \"maybe\"\npriority = 1\n", "p.toml:1:1: import_invalid"},
		{importer.Gemini, "p.toml", "\n[[rule]]\ntoolName = \"x\"\ndecision = \"deny\"\n", "p.toml:2:1: import_invalid"},
		{importer.Gemini, "p.toml", "[[rule]]\ntoolName = \"run_shell_command\"\ncommandRegex = \"(?=x)\"\ndecision = \"deny\"\npriority = 1\n", "p.toml:1:1: import_unsupported"},
		{importer.Gemini, "p.toml", "[[safety_checker]]\ntoolName = \"x\"\n", "p.toml:1:1: import_unsupported"},
		{importer.Gemini, "p.toml", "[[rule]]\ntoolName = \n", "p.toml:2:12: import_syntax"},
		{importer.Cursor, "cli.json", "{\"permissions\": {\"ask\": [\"Shell(ls)\"]}}", "cli.json:1:26: import_invalid"},
		{importer.Cursor, "cli.json", "{\"permissions\": {\"deny\": [\"Read([a)\"]}}", "cli.json:1:27: import_invalid"},
		{importer.Cursor, "permissions.json", "// c\n{\"terminalAllowlist\": \"git\"}", "permissions.json:2:23: import_invalid"},
		{importer.Cursor, "permissions.json", "{\n  \"autoRun\": [1]}", "permissions.json:2:14: import_invalid"},
		{importer.Cursor, "permissions.json", "[\"git\"]", "permissions.json:1:1: import_invalid"},
		{importer.Cursor, "permissions.json", "{\n  \"terminalAllowlist\": [\"git\" \"ls\"]}", "permissions.json:2:31: import_syntax"},
		{importer.BitCode, "g.yaml", "id: g\npatterns:\n  - match: \"(\"\n    verdict: deny\n", "g.yaml:3:12: import_invalid"},
		{importer.BitCode, "g.yaml", "id: g\npatterns:\n  - file_match: \"[a\"\n    verdict: deny\n", "g.yaml:3:17: import_invalid"},
		{importer.BitCode, "g.yaml", "id: g\npatterns:\n  - match: x\n    verdict: block\n", "g.yaml:4:14: import_invalid"},
		{importer.BitCode, "g.yaml", "id: g\npatterns: [\n", "g.yaml:2:1: import_syntax"},
		{importer.BitCode, "g.md", "---\nid: g\ntool: [Bash]\npatterns:\n  - match: x\n    verdict: deny\n---\n", "g.md:3:1: import_invalid"},
		{importer.BitCode, "g.txt", "id: g\n", "g.txt:1:1: import_invalid"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := importer.Import(tc.format, []importer.File{{Name: tc.name, Data: []byte(tc.src)}}, importer.Options{})
			ds, ok := err.(policy.Diagnostics)
			if !ok {
				t.Fatalf("error %v (%T), want diagnostics", err, err)
			}
			got := ds[0].Pos.String() + ": " + string(ds[0].Code)
			if got != tc.want {
				t.Errorf("got %s (%s), want %s", got, ds[0].Message, tc.want)
			}
		})
	}
}

// FuzzImport holds every importer to: never a panic, either diagnostics
// with positions in the source or a policy whose suite passes, and the same
// bytes twice.
func FuzzImport(f *testing.F) {
	for _, format := range importer.Formats() {
		entries, _ := os.ReadDir(filepath.Join("testdata", string(format)))
		for _, e := range entries {
			if strings.Contains(e.Name(), ".golden") {
				continue
			}
			b, _ := os.ReadFile(filepath.Join("testdata", string(format), e.Name()))
			f.Add(string(format), filepath.Ext(e.Name()), b)
		}
	}
	f.Fuzz(func(t *testing.T, format, ext string, data []byte) {
		var fm importer.Format
		switch format {
		case "claude":
			fm = importer.Claude
			ext = ".json"
		case "gemini":
			fm = importer.Gemini
			ext = ".toml"
		case "cursor":
			fm = importer.Cursor
			ext = ".json"
		case "codex":
			fm = importer.Codex
		case "bitcode":
			fm = importer.BitCode
			if ext != ".md" && ext != ".yml" {
				ext = ".yaml"
			}
		default:
			return
		}
		name := "f" + ext
		opts := importer.Options{PolicyFile: "imported.yaml"}
		if fm == importer.Gemini {
			// Every approval mode and tier, chosen by the input.
			opts.GeminiMode = []string{"default", "autoEdit", "yolo", "plan"}[len(data)%4]
			name = []string{"f.toml", ".gemini/policies/f.toml", "/etc/gemini-cli/policies/f.toml", ".gemini/extensions/x/policies/f.toml"}[len(data)/4%4]
		}
		files := []importer.File{{Name: name, Data: data}}
		res, err := importer.Import(fm, files, opts)
		if err != nil {
			ds, ok := err.(policy.Diagnostics)
			if !ok || len(ds) == 0 {
				t.Fatalf("error without diagnostics: %v", err)
			}
			for _, d := range ds {
				if d.Pos.File != name || d.Pos.Line < 1 {
					t.Fatalf("diagnostic without a source position: %v", d)
				}
			}
			return
		}
		again, err := importer.Import(fm, files, opts)
		if err != nil || !bytes.Equal(res.Policy, again.Policy) || !bytes.Equal(res.Suite, again.Suite) {
			t.Fatal("not deterministic")
		}
		runSuite(t, res)
	})
}
