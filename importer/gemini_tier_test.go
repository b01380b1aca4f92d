package importer

import (
	"strings"
	"testing"
)

func TestGeminiFileTier(t *testing.T) {
	for _, tc := range []struct {
		name, home string
		want       string
	}{
		{"/etc/gemini-cli/policies/org.toml", "", "admin"},
		{"/Library/Application Support/GeminiCli/policies/org.toml", "", "admin"},
		{"C:\\ProgramData\\gemini-cli\\policies\\org.toml", "", "admin"},
		{"~/.gemini/policies/mine.toml", "", "user"},
		{"/home/me/.gemini/policies/mine.toml", "/home/me", "user"},
		{"/home/me/.gemini/policies/mine.toml", "/home/you", "workspace"},
		{".gemini/policies/repo.toml", "/home/me", "workspace"},
		{"/src/repo/.gemini/policies/repo.toml", "/home/me", "workspace"},
		{"/home/me/.gemini/extensions/lint/policies/p.toml", "/home/me", "extension"},
		{"team.toml", "", "user"}, // a file named in policyPaths or with --policy
	} {
		if got := geminiTierNames[geminiFileTier(tc.name, tc.home)]; got != tc.want {
			t.Errorf("%s (home %q): tier %s, want %s", tc.name, tc.home, got, tc.want)
		}
	}
}

// TestGeminiTiersAndModes: a higher tier's rule comes first whatever the
// priorities; a rule holds only in its modes; an extension's allow is
// ignored; the mode and the tiers are named in the header.
func TestGeminiTiersAndModes(t *testing.T) {
	admin := File{Name: "/etc/gemini-cli/policies/a.toml", Data: []byte("[[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\npriority = 0\n")}
	user := File{Name: "u.toml", Data: []byte("[[rule]]\ntoolName = \"write_file\"\ndecision = \"deny\"\npriority = 999\n\n[[rule]]\ntoolName = \"web_fetch\"\ndecision = \"allow\"\npriority = 1\nmodes = [\"yolo\"]\n")}
	ext := File{Name: ".gemini/extensions/x/policies/e.toml", Data: []byte("[[rule]]\ntoolName = \"read_file\"\ndecision = \"allow\"\npriority = 1\n")}
	res, err := Import(Gemini, []File{admin, user, ext}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := string(res.Policy)
	for _, want := range []string{
		"# Read as: approval mode default; tiers: /etc/gemini-cli/policies/a.toml: admin, u.toml: user, .gemini/extensions/x/policies/e.toml: extension\n",
		"priority: 15000\n", // the admin allow: tier 5, priority 0
		"priority: 34999\n", // the user deny: tier 4, priority 999, after the allow for write_file:
		`condition: "tool in [\"run_shell_command\", \"ShellTool\"] || !((tool == \"write_file\"))"`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("policy lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "web_fetch") || strings.Contains(p, "read_file") {
		t.Errorf("a rule of another mode or an extension's allow was imported:\n%s", p)
	}
	yolo, err := Import(Gemini, []File{admin, user, ext}, Options{GeminiMode: "yolo"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(yolo.Policy), `tools: ["web_fetch"]`) || !strings.Contains(string(yolo.Policy), "approval mode yolo;") {
		t.Errorf("the yolo import lacks the yolo rule or its header:\n%s", yolo.Policy)
	}
	forced, err := Import(Gemini, []File{admin, user}, Options{GeminiTier: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(forced.Policy), "priority: 33999\n") {
		t.Errorf("--gemini-tier workspace did not put the deny in tier 3:\n%s", forced.Policy)
	}
	for _, o := range []Options{{GeminiMode: "auto"}, {GeminiTier: "system"}} {
		if _, err := Import(Gemini, []File{user}, o); err == nil || !strings.Contains(err.Error(), "u.toml:1:1") {
			t.Errorf("%+v: error %v, want one at u.toml:1:1", o, err)
		}
	}
}
