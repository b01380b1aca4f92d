package hostse2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/celguard/celguard/hooks"
)

// The host versions the suite runs: the host table's TestedVersion, which
// doctor compares with and docs/hooks.md names as the versions tested;
// raise them there together with what the suite shows.
var (
	claudeVersion = testedVersion(hooks.ClaudeCode)
	geminiVersion = testedVersion(hooks.Gemini)
	codexVersion  = testedVersion(hooks.Codex)
)

func testedVersion(host string) string {
	info, err := hooks.LookupHost(host)
	if err != nil || info.TestedVersion == "" {
		panic("hostse2e: no tested version of " + host + " in the host table")
	}
	return info.TestedVersion
}

// npmHost is one host CLI on the npm registry.
type npmHost struct {
	pkg, version, bin string
}

var (
	claudePkg = npmHost{"@anthropic-ai/claude-code", claudeVersion, "claude"}
	geminiPkg = npmHost{"@google/gemini-cli", geminiVersion, "gemini"}
	codexPkg  = npmHost{"@openai/codex", codexVersion, "codex"}
)

// cacheRoot is where the hosts are installed: CELGUARD_HOSTS_CACHE, else
// celguard-hosts under the user's cache directory.
func cacheRoot() (string, error) {
	if d := os.Getenv("CELGUARD_HOSTS_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the host CLIs (set CELGUARD_HOSTS_CACHE): %w", err)
	}
	return filepath.Join(d, "celguard-hosts"), nil
}

var installs sync.Map // prefix -> *installation

type installation struct {
	once sync.Once
	bin  string
	err  error
}

// hostBinary returns the host's command, installing it with npm into a
// prefix keyed by its package and version the first time.
func hostBinary(t *testing.T, h npmHost) string {
	t.Helper()
	root, err := cacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(root, strings.NewReplacer("/", "_", "@", "").Replace(h.pkg)+"@"+h.version)
	v, _ := installs.LoadOrStore(prefix, &installation{})
	inst := v.(*installation)
	inst.once.Do(func() { inst.bin, inst.err = npmInstall(prefix, h) })
	if inst.err != nil {
		t.Fatal(inst.err)
	}
	return inst.bin
}

func npmInstall(prefix string, h npmHost) (string, error) {
	bin := filepath.Join(prefix, "node_modules", ".bin", h.bin)
	spec := h.pkg + "@" + h.version
	cmdline := fmt.Sprintf("npm install --no-audit --no-fund --prefix %s %s", prefix, spec)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := findNPM()
	if err != nil {
		return "", fmt.Errorf("%v; install Node.js 20 or later with npm (apt-get install nodejs npm), then run: %s", err, cmdline)
	}
	// Into a temporary prefix renamed into place, so that an interrupted
	// install is never taken for a complete one.
	tmp := prefix + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", tmp, spec)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %v\n%s", cmdline, err, out)
	}
	if err := os.RemoveAll(prefix); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, prefix); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s did not install %s: %v", cmdline, bin, err)
	}
	return bin, nil
}

var (
	npmOnce sync.Once
	npmPath string
	npmErr  error
)

// findNPM finds npm on PATH; as root without it, it installs Debian's
// nodejs and npm with apt-get.
func findNPM() (string, error) {
	npmOnce.Do(func() {
		if npmPath, npmErr = exec.LookPath("npm"); npmErr == nil {
			return
		}
		if os.Geteuid() != 0 {
			npmErr = fmt.Errorf("npm is not on PATH")
			return
		}
		apt, err := exec.LookPath("apt-get")
		if err != nil {
			npmErr = fmt.Errorf("npm is not on PATH, and there is no apt-get to install it")
			return
		}
		for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "nodejs", "npm"}} {
			cmd := exec.Command(apt, args...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				npmErr = fmt.Errorf("npm is not on PATH, and apt-get %s failed: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
		npmPath, npmErr = exec.LookPath("npm")
	})
	return npmPath, npmErr
}

var (
	celguardOnce sync.Once
	celguardBin  string
	celguardErr  error
	celguardDir  string
)

// celguardBinary builds cmd/celguard once per run.
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
		out, err := exec.Command("go", "build", "-o", celguardBin, "github.com/celguard/celguard/cmd/celguard").CombinedOutput()
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
