package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestModelsAgainstRealPrograms runs the programs of the option models
// that this machine has (make, git, python3, node's npm and npx) in a
// scratch directory with harmless payloads (each would create a marker
// file) and checks that the model says "this runs code" exactly when the
// real program runs the payload: Hazard names the option, or Dirs names
// the directory whose scripts run. No network is used (npm offline, a
// scratch HOME and cache).
func TestModelsAgainstRealPrograms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prog  string
		setup map[string]string // files of the scratch directory
		cmd   string
		runs  bool // the payload runs
	}{
		{name: "make --eval runs a recipe given as an option", prog: "make",
			cmd: "make --eval='x: ; @touch MARKER' x", runs: true},
		{name: "make -n runs nothing", prog: "make", setup: map[string]string{"Makefile": "x:\n\ttouch MARKER\n"},
			cmd: "make -n x"},
		{name: "git -c alias runs a command", prog: "git",
			cmd: "git init -q . && git -c alias.x='!touch MARKER' x", runs: true},
		{name: "git log runs nothing", prog: "git", cmd: "git init -q . && git log -1 || true"},
		{name: "python3 -c runs inline code", prog: "python3", cmd: "python3 -c 'open(\"MARKER\", \"w\")'", runs: true},
		{name: "python3 --version runs nothing", prog: "python3", cmd: "python3 --version"},
		{name: "npx -c runs a shell command", prog: "npx", setup: map[string]string{"package.json": `{"name":"s","version":"1.0.0"}`},
			cmd: "npx -c 'touch MARKER'", runs: true},
		{name: "npx --version runs nothing", prog: "npx", cmd: "npx --version"},
		{name: "npm --prefix runs the scripts of another directory", prog: "npm",
			setup: map[string]string{"sub/package.json": `{"name":"s","version":"1.0.0","scripts":{"t":"touch ../MARKER"}}`},
			cmd:   "npm --prefix sub run t", runs: true},
		{name: "npm run in the workspace runs no other directory's scripts", prog: "npm",
			setup: map[string]string{"package.json": `{"name":"s","version":"1.0.0","scripts":{"t":"true"}}`},
			cmd:   "npm run t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.prog); err != nil {
				t.Fatalf("%s is not installed: the models are checked against it (%v)", tc.prog, err)
			}
			dir := t.TempDir()
			for name, content := range tc.setup {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sh := exec.CommandContext(ctx, "sh", "-c", tc.cmd)
			sh.Dir = dir
			home := t.TempDir()
			sh.Env = append(os.Environ(), "HOME="+home, "npm_config_cache="+filepath.Join(home, "npm"),
				"npm_config_offline=true", "npm_config_update_notifier=false", "GIT_CONFIG_GLOBAL=/dev/null",
				"GIT_CONFIG_NOSYSTEM=1")
			if out, err := sh.CombinedOutput(); err != nil {
				t.Logf("%s: %v\n%s", tc.cmd, err, out)
			}
			_, err := os.Stat(filepath.Join(dir, "MARKER"))
			ran := err == nil
			if ran != tc.runs {
				t.Fatalf("%s: the payload ran = %v, the case says %v", tc.cmd, ran, tc.runs)
			}
			said := false
			for _, c := range Parse(tc.cmd).Commands {
				if c.Program == tc.prog && (c.Hazard() != "" || len(c.Dirs()) > 0) {
					said = true
				}
			}
			if said != ran {
				t.Errorf("%s: the model says it runs code = %v, the real %s did = %v", tc.cmd, said, tc.prog, ran)
			}
		})
	}
}
