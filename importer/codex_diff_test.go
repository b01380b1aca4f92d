package importer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/internal/npmhost"
	"github.com/celguard/celguard/policy"
)

// TestCodexDifferential asks the real `codex execpolicy check` (the pinned
// Codex, installed from npm into the hosts' cache) and the imported policy
// about the same generated argvs, sent as Codex's shell tool sends them: every
// decision must be Codex's or stricter (allow < prompt < forbidden), and each
// stricter one is listed with why.
func TestCodexDifferential(t *testing.T) {
	bin, err := npmhost.Install(npmhost.Codex)
	if err != nil {
		t.Fatal(err)
	}
	codex := npmhost.NativeCodex(bin)
	rulesPath := filepath.Join("testdata", "codex-diff.rules")
	data, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := importer.Import(importer.Codex, []importer.File{{Name: rulesPath, Data: data}}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := celguard.Load(context.Background(), celguard.WithSources(policy.Source{Name: "imported.yaml", Data: res.Policy}), celguard.WithBundle("none"), celguard.WithUserDir("-"), celguard.WithProjectDir("-"))
	if err != nil {
		t.Fatal(err)
	}
	calls := codexDiffCalls()
	if len(calls) < 200 {
		t.Fatalf("%d calls generated, want at least 200", len(calls))
	}
	home := t.TempDir()
	equal, stricter := 0, 0
	var report strings.Builder
	for _, argv := range calls {
		cmd := exec.Command(codex, append([]string{"execpolicy", "check", "--rules", rulesPath, "--"}, argv...)...)
		cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("codex execpolicy check %q: %v\n%s", argv, err, out)
		}
		var ev struct {
			Decision string `json:"decision"`
		}
		if err := json.Unmarshal(out, &ev); err != nil {
			t.Fatalf("codex execpolicy check %q: %v: %s", argv, err, out)
		}
		words := make([]any, len(argv))
		for i, a := range argv {
			words[i] = a
		}
		d, err := g.NewSession("diff", nil).Before(context.Background(), eval.Call{Tool: "shell", Args: map[string]any{"command": words}})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		switch {
		case d.RuleID == "":
		case d.Verdict == policy.Allow:
			got = "allow"
		case d.Verdict == policy.Block && d.Code == eval.CodeApprovalRequired:
			got = "prompt"
		case d.Verdict == policy.Block:
			got = "forbidden"
		default:
			t.Fatalf("%q: unexpected decision %v", argv, d.Verdict)
		}
		want := ev.Decision
		switch {
		case got == want:
			equal++
		case rank(got) > rank(want):
			stricter++
			reason := why(argv)
			fmt.Fprintf(&report, "%q: codex %s, celguard %s (%s): %s\n", argv, orNone(want), orNone(got), d.RuleID, reason)
			if reason == "UNEXPLAINED" {
				t.Errorf("%q: a stricter decision no documented approximation explains", argv)
			}
		default:
			t.Errorf("LOOSER: %q: codex %s, celguard %s (%s)", argv, orNone(want), orNone(got), d.RuleID)
		}
	}
	t.Logf("%d calls: %d equal, %d stricter", len(calls), equal, stricter)
	checkDiffGolden(t, filepath.Join("testdata", "codex-diff.stricter.golden.txt"),
		fmt.Sprintf("# Argvs on which the imported Codex policy is stricter than `codex execpolicy check`,\n# with why (TestCodexDifferential).\n## %d calls, %d equal, %d stricter\n", len(calls), equal, stricter)+report.String())
}

// rank orders the decisions by strictness: "" (no rule matched) leaves the
// call to Codex's approval policy or to the rest of celguard's policy set,
// which may ask or allow: stricter than an allow, looser than a prompt.
func rank(d string) int {
	return map[string]int{"allow": 0, "": 1, "prompt": 2, "forbidden": 3}[d]
}

func orNone(s string) string {
	if s == "" {
		return "no match"
	}
	return s
}

var diffWrappers = []string{"sudo", "env", "timeout", "nice", "nohup", "xargs", "bash", "sh"}

// why names the documented reason for a stricter decision.
func why(argv []string) string {
	switch {
	case slices.Contains(diffWrappers, argv[0]):
		return "celguard decides the command " + argv[0] + " runs (wrappers and nested scripts are looked through)"
	case strings.Contains(argv[0], "/"):
		return "block and ask rules compare the program's base name"
	}
	for _, a := range argv {
		if strings.ContainsAny(a, "$`\n") {
			return "a word celguard's quoting writes outside the plain subset"
		}
	}
	return "UNEXPLAINED"
}

// codexDiffCalls generates argvs: each rule's prefix, with a word more,
// with one word changed, shortened; behind wrappers and absolute paths;
// with words that are shell syntax; and seeded random ones from the
// rules' vocabulary.
func codexDiffCalls() [][]string {
	prefixes := [][]string{
		{"git", "status"}, {"git", "log"}, {"git", "diff"}, {"git", "show"}, {"git", "push"}, {"git", "push", "--force"},
		{"git", "push", "-f"}, {"git"}, {"ls"}, {"pwd"}, {"cat"}, {"head"}, {"rm", "-rf"}, {"rm", "-fr"}, {"rm", "-r"}, {"rm"},
		{"npm", "test"}, {"npm", "run"}, {"npm", "publish"}, {"kubectl", "get"}, {"kubectl", "describe"}, {"kubectl", "delete"},
		{"curl"}, {"/usr/bin/make"}, {"go", "build"}, {"go", "test"}, {"go", "vet"}, {"go", "clean"}, {"cargo", "build"},
		{"cargo", "test"}, {"cargo", "clean"}, {"make"}, {"git", "commit"}, {"npm", "install"},
	}
	var out [][]string
	seen := map[string]bool{}
	add := func(argv ...string) {
		k := strings.Join(argv, "\x00")
		if len(argv) > 0 && !seen[k] {
			seen[k] = true
			out = append(out, slices.Clone(argv))
		}
	}
	for _, p := range prefixes {
		add(p...)
		add(append(slices.Clone(p), "x")...)
		add(append(slices.Clone(p), "--help", "a b")...)
		if len(p) > 1 {
			add(p[:len(p)-1]...)
			changed := slices.Clone(p)
			changed[len(p)-1] = strings.ToUpper(changed[len(p)-1])
			add(changed...)
			add(append(append([]string{p[0], "-C", "dir"}, p[1:]...), "x")...)
		}
		add(append([]string{"sudo"}, p...)...)
		add(append([]string{"/usr/bin/" + filepath.Base(p[0])}, p[1:]...)...)
		add(append(slices.Clone(p), "$(id)")...)
		add(append(slices.Clone(p), "it's", ";", "rm")...)
	}
	add("bash", "-lc", "git status")
	add("bash", "-lc", "rm -rf /")
	add("env", "FOO=1", "git", "push")
	vocab := []string{"git", "status", "push", "--force", "rm", "-rf", "ls", "npm", "test", "publish", "kubectl", "delete", "curl", "go", "clean", "x", "-f", "make"}
	r := rand.New(rand.NewPCG(28, 1))
	for len(out) < 320 {
		n := 1 + r.IntN(4)
		argv := make([]string, n)
		for i := range argv {
			argv[i] = vocab[r.IntN(len(vocab))]
		}
		add(argv...)
	}
	return out
}
