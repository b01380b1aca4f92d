package telemetry_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/celguard/celguard/telemetry"
)

// TestStripCredentials: a remote's token never leaves in the who.
func TestStripCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"https://x-access-token:ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r.git": "https://github.com/o/r.git",
		"https://user@gitlab.example/o/r.git?private_token=glpat-abc#frag":                   "https://gitlab.example/o/r.git",
		"git@github.com:o/r.git":     "github.com:o/r.git",
		"https://github.com/o/r.git": "https://github.com/o/r.git",
		"/srv/git/r.git":             "/srv/git/r.git",
		"ssh://git:secret@host/r":    "ssh://host/r",
	} {
		if got := telemetry.StripCredentials(in); got != want {
			t.Errorf("StripCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWhoAmI: the repository is found above the directory, with its origin
// remote without credentials; the agent host is the caller's.
func TestWhoAmI(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://other.test/x.git\n[remote \"origin\"]\n\turl = https://bob:tok@example.test/r.git\n"
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	w := telemetry.WhoAmI(sub, "codex", "0.9")
	if w.RepoRoot != root || w.RepoRemote != "https://example.test/r.git" || w.AgentHost != "codex" || w.AgentVersion != "0.9" {
		t.Errorf("WhoAmI = %+v", w)
	}
	if w.Machine == "" {
		t.Errorf("WhoAmI: no machine")
	}
}

// TestEnabled: off by default; an endpoint alone does not turn it on.
func TestEnabled(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{map[string]string{"CELGUARD_TELEMETRY": "otlp"}, true},
		{map[string]string{"CELGUARD_TELEMETRY": "1", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"CELGUARD_TELEMETRY": "no"}, false},
	} {
		if got := telemetry.Enabled(env(c.env)); got != c.want {
			t.Errorf("Enabled(%v) = %v", c.env, got)
		}
		if got := telemetry.FromEnv(env(c.env)) != nil; got != c.want {
			t.Errorf("FromEnv(%v) != nil: %v", c.env, got)
		}
	}
}
