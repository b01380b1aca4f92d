package hostse2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/internal/npmhost"
)

// The host versions the suite runs: the host table's TestedVersion, which
// doctor compares with and docs/hooks.md names as the versions tested;
// raise them there together with what the suite shows.
var (
	claudeVersion   = testedVersion(hooks.ClaudeCode)
	geminiVersion   = testedVersion(hooks.Gemini)
	codexVersion    = testedVersion(hooks.Codex)
	copilotVersion  = testedVersion(hooks.Copilot)
	opencodeVersion = testedVersion(hooks.OpenCode)
)

func testedVersion(host string) string {
	info, err := hooks.LookupHost(host)
	if err != nil || info.TestedVersion == "" {
		panic("hostse2e: no tested version of " + host + " in the host table")
	}
	return info.TestedVersion
}

// The hosts' npm packages, installed by internal/npmhost into the cache
// the importer's differential tests share.
var (
	claudePkg   = npmhost.Host{Pkg: "@anthropic-ai/claude-code", Version: claudeVersion, Bin: "claude"}
	geminiPkg   = npmhost.Host{Pkg: "@google/gemini-cli", Version: geminiVersion, Bin: "gemini"}
	codexPkg    = npmhost.Host{Pkg: "@openai/codex", Version: codexVersion, Bin: "codex"}
	copilotPkg  = npmhost.Host{Pkg: "@github/copilot", Version: copilotVersion, Bin: "copilot"}
	opencodePkg = npmhost.Host{Pkg: "opencode-ai", Version: opencodeVersion, Bin: "opencode"}
)

// hostBinary returns the host's command, installing it with npm the first
// time.
func hostBinary(t *testing.T, h npmhost.Host) string {
	t.Helper()
	bin, err := npmhost.Install(h)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var (
	celguardOnce sync.Once
	celguardBin  string
	celguardErr  error
	celguardDir  string
)

// celguardBinary builds cmd/celguard once per run, with the lean hook
// client (cmd/celguard-hook) beside it, as `go install ./cmd/...` does.
// The suite installs its hooks with --decision-log, which install writes
// as celguard hook HOST: the hosts run the full binary.
func celguardBinary(t *testing.T) string {
	t.Helper()
	celguardOnce.Do(func() {
		celguardDir, celguardErr = os.MkdirTemp("", "celguard-hostse2e-bin-")
		if celguardErr != nil {
			return
		}
		// Readable and runnable by everyone: the hosts run it as the test's user.
		_ = os.Chmod(celguardDir, 0o755)
		celguardBin = filepath.Join(celguardDir, "celguard")
		out, err := exec.Command("go", "build", "-o", celguardDir+string(filepath.Separator), "github.com/celguard/celguard/cmd/...").CombinedOutput()
		if err != nil {
			celguardErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if celguardErr != nil {
		t.Fatal(celguardErr)
	}
	return celguardBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if celguardDir != "" {
		os.RemoveAll(celguardDir)
	}
	os.Exit(code)
}
