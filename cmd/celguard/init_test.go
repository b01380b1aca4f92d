package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflow is the part of a GitHub Actions workflow TestInitWorkflow reads.
type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name       string            `yaml:"name"`
			Uses       string            `yaml:"uses"`
			With       map[string]string `yaml:"with"`
			Run        string            `yaml:"run"`
			WorkingDir string            `yaml:"working-directory"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestInitWorkflow: the workflow init writes at the repository root checks
// out celguard's source at the ref of the celguard that wrote it, builds it
// with go install ./cmd/celguard there (the module is not published, so
// go install ...@version cannot work), and lints and tests only .celguard/.
func TestInitWorkflow(t *testing.T) {
	defer func(v string) { version, readBuildInfo = v, debug.ReadBuildInfo }(version)
	for _, tt := range []struct {
		name, version, wantRef string
	}{
		{"release build", "v0.4.0", "v0.4.0"},
		{"development build", "", "main"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			version = tt.version
			readBuildInfo = func() (*debug.BuildInfo, bool) { return nil, false }
			repo := t.TempDir()
			if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(repo, "services", "api")
			var stdout, stderr bytes.Buffer
			if code := runInit(t.Context(), initParams{dir: sub, stdio: stdio{stdout: &stdout, stderr: &stderr}}); code != exitOK {
				t.Fatalf("init exited %d: %s", code, stderr.String())
			}
			if _, err := os.Stat(sub); err == nil {
				t.Errorf("init made %s; it writes at the repository root", sub)
			}
			data, err := os.ReadFile(filepath.Join(repo, ".github", "workflows", "celguard.yml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{".celguard/policy.yaml", ".celguard/policy_test.yaml"} {
				if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			var wf workflow
			if err := yaml.Unmarshal(data, &wf); err != nil {
				t.Fatalf("the workflow is not YAML: %v", err)
			}
			if got := wf.Env["CELGUARD_REF"]; got != tt.wantRef {
				t.Errorf("CELGUARD_REF = %q, want %q", got, tt.wantRef)
			}
			if (tt.wantRef == "main") != strings.Contains(stdout.String(), "set CELGUARD_REF") {
				t.Errorf("init's output says nothing of pinning (or says it for a pinned ref):\n%s", stdout.String())
			}
			steps := wf.Jobs["policies"].Steps
			var checkout, install, lint, test bool
			for _, s := range steps {
				switch {
				case s.With["repository"] == "celguard/celguard":
					checkout = s.With["ref"] == "${{ env.CELGUARD_REF }}" && s.With["path"] == ".celguard-src"
				case strings.Contains(s.Run, "go install"):
					install = strings.HasPrefix(s.Run, "go install ./cmd/celguard") && s.WorkingDir == ".celguard-src"
					if strings.Contains(s.Run, "@") {
						t.Errorf("install step %q installs by module version: the module is not published", s.Run)
					}
				case strings.HasPrefix(s.Run, "celguard lint"):
					lint = slices.Contains(strings.Fields(s.Run), ".celguard/")
				case strings.HasPrefix(s.Run, "celguard test"):
					test = slices.Contains(strings.Fields(s.Run), ".celguard/")
				}
			}
			if !checkout || !install || !lint || !test {
				t.Errorf("checkout of celguard at CELGUARD_REF %v, go install ./cmd/celguard in it %v, lint .celguard/ %v, test .celguard/ %v; want all\n%s",
					checkout, install, lint, test, data)
			}
		})
	}
}
