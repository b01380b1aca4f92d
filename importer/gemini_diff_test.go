package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/internal/npmhost"
	"github.com/celguard/celguard/policy"
)

// geminiCheck runs Gemini CLI's own policy engine (PolicyEngine and
// loadPoliciesFromToml from its bundle, the pinned version) in node on
// policy files, each in its tier, and calls, in an approval mode, and
// writes for each call its decision and whether a rule made it.
const geminiCheck = `
const [,, chunk, tiersJSON, modes, callsFile] = process.argv;
const fs = await import('node:fs');
const m = await import(chunk);
const tiers = JSON.parse(tiersJSON);
const res = await m.loadPoliciesFromToml(Object.keys(tiers), (p) => tiers[p]);
const errs = res.errors.filter(e => e.severity !== 'warning');
if (errs.length) { console.error(JSON.stringify(errs)); process.exit(2); }
const calls = JSON.parse(fs.readFileSync(callsFile, 'utf8'));
for (const mode of modes.split(',')) {
  const engine = new m.PolicyEngine({ rules: res.rules, checkers: res.checkers, approvalMode: mode, defaultDecision: 'ask_user' });
  const out = [];
  for (const call of calls) {
    const r = await engine.check({ name: call.tool, args: call.args }, undefined);
    out.push([r.decision, r.rule !== undefined]);
  }
  fs.writeFileSync(callsFile + '.' + mode, JSON.stringify(out));
}
`

// geminiDiffFiles are the differential test's policy files, the name
// each is imported under (which gives its tier, as Gemini CLI's place
// would), and that tier's number.
var geminiDiffFiles = []struct {
	file, name string
	tier       int
}{
	{"gemini-diff-admin.toml", "/etc/gemini-cli/policies/admin.toml", 5},
	{"gemini-diff.toml", "team.toml", 4},
	{"gemini-diff-workspace.toml", ".gemini/policies/workspace.toml", 3},
}

// TestGeminiDifferential asks Gemini CLI's policy engine and the imported
// policy about the same generated calls, in each approval mode, with rules
// in three tiers: every decision must be Gemini CLI's or stricter (allow <
// no rule < ask < deny), each stricter one listed with why.
func TestGeminiDifferential(t *testing.T) {
	bin, err := npmhost.Install(npmhost.Gemini)
	if err != nil {
		t.Fatal(err)
	}
	chunk := geminiPolicyChunk(t, bin)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH (npmhost installs it with npm)")
	}
	var files []importer.File
	tiers := map[string]int{}
	for _, f := range geminiDiffFiles {
		p, _ := filepath.Abs(filepath.Join("testdata", f.file))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, importer.File{Name: f.name, Data: data})
		tiers[p] = f.tier
	}
	calls := geminiDiffCalls()
	if len(calls) < 200 {
		t.Fatalf("%d calls, want at least 200", len(calls))
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "check.mjs")
	callsPath := filepath.Join(dir, "calls.json")
	b, _ := json.Marshal(calls)
	if err := os.WriteFile(script, []byte(geminiCheck), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(callsPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tiersJSON, _ := json.Marshal(tiers)
	var report strings.Builder
	report.WriteString("# Calls on which the imported Gemini CLI policy is stricter than Gemini CLI's\n# own policy engine, per approval mode, with why (TestGeminiDifferential).\n")
	modes := []string{"default", "autoEdit", "yolo", "plan"}
	cmd := exec.Command(node, script, chunk, string(tiersJSON), strings.Join(modes, ","), callsPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "GEMINI_CLI_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("node: %v\n%s%s", err, out, stderr.String())
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			res, err := importer.Import(importer.Gemini, files, importer.Options{GeminiMode: mode})
			if err != nil {
				t.Fatal(err)
			}
			g, err := celguard.Load(context.Background(), celguard.WithSources(policy.Source{Name: "imported.yaml", Data: res.Policy}),
				celguard.WithBundle("none"), celguard.WithUserDir("-"), celguard.WithProjectDir("-"))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(callsPath + "." + mode)
			if err != nil {
				t.Fatal(err)
			}
			var gem [][2]any
			if err := json.Unmarshal(raw, &gem); err != nil {
				t.Fatal(err)
			}
			report.WriteString(compareGemini(t, mode, g, calls, gem))
		})
	}
	checkDiffGolden(t, filepath.Join("testdata", "gemini-diff.stricter.golden.txt"), report.String())
}

// checkDiffGolden compares a differential test's list of stricter cases
// with its golden file (-update rewrites it).
func checkDiffGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the stricter cases found (run go test -update and review the diff):\n%s", golden, got)
	}
}

// compareGemini compares Gemini CLI's decisions with the imported
// policy's on the same calls.
func compareGemini(t *testing.T, mode string, g *celguard.Guard, calls []diffCall, gem [][2]any) string {
	var out strings.Builder
	rank := map[string]int{"allow": 0, "none": 1, "ask_user": 2, "deny": 3}
	equal, stricter := 0, 0
	for i, c := range calls {
		want, _ := gem[i][0].(string)
		byRule, _ := gem[i][1].(bool)
		if want == "ask_user" && !byRule {
			want = "none" // no rule: Gemini CLI's default, as celguard leaves it to the rest
		}
		d, err := g.NewSession("diff", nil).Before(context.Background(), eval.Call{Tool: c.Tool, Args: c.Args})
		if err != nil {
			t.Fatal(err)
		}
		got := "none"
		switch {
		case d.RuleID == "":
		case d.Verdict == policy.Allow:
			got = "allow"
		case d.Verdict == policy.Block && d.Code == eval.CodeApprovalRequired:
			got = "ask_user"
		case d.Verdict == policy.Block:
			got = "deny"
		}
		switch {
		case got == want:
			equal++
		case rank[got] > rank[want]:
			stricter++
			args, _ := json.Marshal(c.Args)
			fmt.Fprintf(&out, "%s: %s %s: gemini %s, celguard %s (%s): %s\n", mode, c.Tool, args, want, got, d.RuleID, geminiWhy(mode, c, want, byRule, got))
		default:
			t.Errorf("LOOSER: %s %v: gemini %s (by a rule: %v), celguard %s (%s)", c.Tool, c.Args, want, byRule, got, d.RuleID)
		}
	}
	t.Logf("%s mode: %d calls: %d equal, %d stricter, none looser", mode, len(calls), equal, stricter)
	return fmt.Sprintf("## %s: %d calls, %d equal, %d stricter\n", mode, len(calls), equal, stricter) + out.String()
}

func geminiWhy(mode string, c diffCall, want string, byRule bool, got string) string {
	cmd, _ := c.Args["command"].(string)
	switch {
	case want == "allow" && !byRule && mode == "yolo":
		return "the yolo mode allows what no rule names; the import leaves it to the rest of the policy set"
	case want == "allow" && !byRule:
		return "Gemini CLI's heuristics allow a command no rule names; the import leaves it to the rest of the policy set"
	case want == "allow" && got == "none":
		return "an allow holds only for a plain line whose every command an allow rule matches"
	case strings.HasPrefix(cmd, "sudo ") || strings.HasPrefix(cmd, "env ") || strings.Contains(cmd, "bash -c"):
		return "deny and ask rules are also tried on the command a wrapper or nested shell runs"
	default:
		return "every deny is tried before every ask and every ask before every allow, whatever the priorities"
	}
}

type diffCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// geminiPolicyChunk finds the bundle file that exports Gemini CLI's
// policy engine.
func geminiPolicyChunk(t *testing.T, bin string) string {
	prefix := filepath.Dir(filepath.Dir(filepath.Dir(bin)))
	files, _ := filepath.Glob(filepath.Join(prefix, "node_modules", "@google", "gemini-cli", "bundle", "chunk-*.js"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte("var PolicyEngine = class")) && bytes.Contains(b, []byte("  loadPoliciesFromToml,")) {
			return f
		}
	}
	t.Fatalf("no bundle file of %s exports PolicyEngine and loadPoliciesFromToml", prefix)
	return ""
}

// geminiDiffCalls generates shell commands (single, compound, wrapped, with
// redirections and substitutions) from the rules' vocabulary, and calls of
// the other tools.
func geminiDiffCalls() []diffCall {
	var out []diffCall
	seen := map[string]bool{}
	shell := func(cmd string) {
		if !seen[cmd] {
			seen[cmd] = true
			out = append(out, diffCall{"run_shell_command", map[string]any{"command": cmd}})
		}
	}
	base := []string{"git status", "git log -p", "git diff HEAD", "git push", "git push origin main", "git push --force", "git push -f origin",
		"rm -rf build", "rm -r x", "rm x", "rm -fr /", "npm test", "npm run lint", "yarn test", "npm publish", "npm install", "curl https://x.io",
		"ls -la", "cat README.md", "echo hi", "git statusx", "git", "make", "python3 x.py", "git commit -m wip"}
	for _, b := range base {
		shell(b)
		shell("sudo " + b)
		shell(b + " > out.txt")
		shell("bash -c '" + b + "'")
		shell("echo $(" + b + ")")
	}
	r := rand.New(rand.NewPCG(28, 2))
	ops := []string{" && ", " ; ", " | ", " || "}
	for len(out) < 260 {
		n := 2 + r.IntN(2)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = base[r.IntN(len(base))]
		}
		cmd := parts[0]
		for _, p := range parts[1:] {
			cmd += ops[r.IntN(len(ops))] + p
		}
		shell(cmd)
	}
	for _, tool := range []string{"read_file", "glob", "search_file_content", "grep_search", "write_file", "replace", "web_fetch",
		"mcp_github_create_issue", "mcp_github_list_issues", "mcp_jira_get", "mcp_other_x", "list_directory"} {
		out = append(out, diffCall{tool, map[string]any{"file_path": "src/a.go"}})
	}
	return out
}
