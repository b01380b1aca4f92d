// Package npmhost installs a host CLI from the npm registry at a pinned
// version into a cache shared by every test that needs it, for tests that
// run the real host: the importer's differential tests here, the real-host
// suite (hooks/hostse2e) with the same cache layout, so that one download
// serves both.
//
// The cache is CELGUARD_HOSTS_CACHE, else celguard-hosts under the user's
// cache directory; a package installs into PKG@VERSION there (slashes as
// _, no @ in the scope), through a temporary prefix renamed into place, so
// an interrupted install is never taken for a complete one. Without npm on
// PATH, as root, Debian's nodejs and npm are installed with apt-get; the
// error otherwise names the command to run.
package npmhost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Host is one host CLI on the npm registry.
type Host struct {
	// Pkg is the npm package, e.g. "@openai/codex".
	Pkg string
	// Version is the exact version installed.
	Version string
	// Bin is the command the package installs in node_modules/.bin.
	Bin string
}

// Codex is the Codex version the real-host tests pin (hooks/hostse2e pins
// the same one).
var Codex = Host{"@openai/codex", "0.169.0", "codex"}

// Gemini is the Gemini CLI version the real-host tests pin (hooks/hostse2e
// pins the same one).
var Gemini = Host{"@google/gemini-cli", "0.61.0", "gemini"}

// CacheRoot is where hosts are installed.
func CacheRoot() (string, error) {
	if d := os.Getenv("CELGUARD_HOSTS_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the host CLIs (set CELGUARD_HOSTS_CACHE): %w", err)
	}
	return filepath.Join(d, "celguard-hosts"), nil
}

// Prefix is the npm prefix h installs into.
func (h Host) Prefix() (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, strings.NewReplacer("/", "_", "@", "").Replace(h.Pkg)+"@"+h.Version), nil
}

var installs sync.Map // prefix -> *installation

type installation struct {
	once sync.Once
	bin  string
	err  error
}

// Install returns the path of h's command, installing it the first time.
func Install(h Host) (string, error) {
	prefix, err := h.Prefix()
	if err != nil {
		return "", err
	}
	v, _ := installs.LoadOrStore(prefix, &installation{})
	inst := v.(*installation)
	inst.once.Do(func() { inst.bin, inst.err = npmInstall(prefix, h) })
	return inst.bin, inst.err
}

func npmInstall(prefix string, h Host) (string, error) {
	bin := filepath.Join(prefix, "node_modules", ".bin", h.Bin)
	spec := h.Pkg + "@" + h.Version
	cmdline := fmt.Sprintf("npm install --no-audit --no-fund --prefix %s %s", prefix, spec)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := findNPM()
	if err != nil {
		return "", fmt.Errorf("%v; install Node.js 20 or later with npm (apt-get install nodejs npm), then run: %s", err, cmdline)
	}
	tmp := prefix + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	out, err := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", tmp, spec).CombinedOutput()
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

// NativeCodex returns the platform binary the codex npm package wraps in
// node (starting it directly is ~15x faster, which a test of hundreds of
// calls needs), or the wrapper when there is none.
func NativeCodex(bin string) string {
	prefix := filepath.Dir(filepath.Dir(filepath.Dir(bin))) // .../node_modules/.bin/codex -> prefix
	matches, _ := filepath.Glob(filepath.Join(prefix, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	if len(matches) == 1 {
		return matches[0]
	}
	return bin
}
