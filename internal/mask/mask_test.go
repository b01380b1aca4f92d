package mask

import (
	"strings"
	"testing"
)

// TestMasker: policy paths are masked (wildcards, lists), credentials
// redacted in values and keys, masked values cut out of free text, and
// strings bounded only when asked.
func TestMasker(t *testing.T) {
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	args := map[string]any{
		"env":   map[string]any{"A": "secret-a", "B": "secret-b"},
		"list":  []any{"keep", "drop-this"},
		"note":  "token " + token,
		token:   "a key that is a credential",
		"short": "ok",
	}
	m := &Masker{}
	out := m.Args("args", args, For([]Rule{{Paths: [][]string{{"env", "*"}, {"list", "1"}}}, {Tools: []string{"Other"}, Paths: [][]string{{"short"}}}}, "Bash"))
	env := out["env"].(map[string]any)
	if env["A"] != Masked || env["B"] != Masked || out["list"].([]any)[1] != Masked || out["list"].([]any)[0] != "keep" {
		t.Errorf("policy masks: %v", out)
	}
	if out["short"] != "ok" {
		t.Errorf("a mask for another tool applied: %v", out)
	}
	if out["note"] != "token [REDACTED:github_token]" {
		t.Errorf("note = %v", out["note"])
	}
	for k := range out {
		if strings.Contains(k, "ghp_") {
			t.Errorf("a credential key was kept: %q", k)
		}
	}
	if args["env"].(map[string]any)["A"] != "secret-a" {
		t.Error("the caller's arguments changed")
	}
	if got := m.Free("with secret-a and drop-this and " + token); got != "with [MASKED] and [MASKED] and [REDACTED:github_token]" {
		t.Errorf("Free = %q", got)
	}
	var paths []string
	for _, p := range m.Paths {
		paths = append(paths, p.Path+":"+p.By)
	}
	if got := strings.Join(paths, " "); got != "args.env.A:policy args.env.B:policy args.list.1:policy args.[REDACTED:github_token]:secret args.note:secret" {
		t.Errorf("paths = %s", got)
	}
	if s := strings.Repeat("é", 10); (&Masker{}).Bound(s) != s {
		t.Error("the zero Masker bounds")
	}
	if got := (&Masker{MaxString: 5}).Bound("ééé"); got != "éé…[2 bytes cut]" {
		t.Errorf("Bound cuts on a character boundary: %q", got)
	}
}
