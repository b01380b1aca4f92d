package python_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/celguard/celguard/internal/npmhost"
)

// minor is the oldest Python 3 minor version the tests run on: operator-use,
// one of the pinned hosts, requires Python 3.12.
const minor = 12

// uvVersion is the installer used to provision the environment (from PyPI).
const uvVersion = "0.13.9"

// TestPython provisions a virtual environment with the pinned packages of
// requirements-test.txt (cached, keyed by the pins and the interpreter), then
// runs mypy --strict on the package and pytest, whose tests drive each host's
// own agent loop against a celguard serve built from this module. It never
// skips: anything missing fails with the command that provides it.
func TestPython(t *testing.T) {
	py := findPython(t)
	venv := provision(t, py)
	bin := filepath.Join(t.TempDir(), "celguard")
	run(t, "..", nil, "go", "build", "-o", bin, "./cmd/celguard")

	// The reference MCP servers the proxy's tests front, from npm like
	// the real hosts.
	fsServer, err := npmhost.Install(npmhost.Host{Pkg: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem"})
	if err != nil {
		t.Fatal(err)
	}
	everything, err := npmhost.Install(npmhost.Host{Pkg: "@modelcontextprotocol/server-everything", Version: "2026.8.31", Bin: "mcp-server-everything"})
	if err != nil {
		t.Fatal(err)
	}

	env := []string{
		"CELGUARD_BIN=" + bin,
		"CELGUARD_MCP_FILESYSTEM=" + fsServer,
		"CELGUARD_MCP_EVERYTHING=" + everything,
		"PYTHONPATH=" + mustAbs(t, "src"),
		"PYTHONDONTWRITEBYTECODE=1",
		"MYPY_CACHE_DIR=" + filepath.Join(venv, "mypy-cache"),
		"NO_PROXY=127.0.0.1,localhost",
	}
	run(t, ".", env, filepath.Join(venv, "bin", "python"), "-m", "mypy")
	run(t, ".", env, filepath.Join(venv, "bin", "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
		"-W", "ignore::DeprecationWarning", "tests")
}

// findPython returns an interpreter of version 3.minor or later: $CELGUARD_PYTHON,
// else python3.N (oldest first) and python3 on PATH, else pyenv's versions.
func findPython(t *testing.T) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("CELGUARD_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	// The oldest that qualifies first: the pins were frozen on 3.12.
	for n := minor; n <= 14; n++ {
		cands = append(cands, fmt.Sprintf("python3.%d", n))
	}
	cands = append(cands, "python3")
	var roots []string
	if r := os.Getenv("PYENV_ROOT"); r != "" {
		roots = append(roots, r)
	}
	if h, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(h, ".pyenv"))
	}
	for _, r := range roots {
		for n := minor; n <= 14; n++ {
			vs, _ := filepath.Glob(filepath.Join(r, "versions", fmt.Sprintf("3.%d.*", n), "bin", "python3"))
			sort.Strings(vs)
			cands = append(cands, vs...)
		}
	}
	for _, c := range cands {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		out, err := exec.Command(p, "-c", fmt.Sprintf("import sys; print(sys.version_info >= (3, %d))", minor)).Output()
		if err == nil && strings.TrimSpace(string(out)) == "True" {
			return p
		}
	}
	t.Fatalf("no Python 3.%d or later found (operator-use needs it); tried %s.\n"+
		"Install one and run again, e.g.: pyenv install 3.12 (or, on Debian 13 / Ubuntu 24.04: apt-get install -y python3 python3-venv),\n"+
		"or point CELGUARD_PYTHON at an interpreter: CELGUARD_PYTHON=/path/to/python3.12 go test ./python/", minor, strings.Join(cands, ", "))
	return ""
}

// provision returns a virtual environment with requirements-test.txt
// installed, made once per pins and interpreter in the user's cache directory.
func provision(t *testing.T, py string) string {
	t.Helper()
	reqs, err := os.ReadFile("requirements-test.txt")
	if err != nil {
		t.Fatal(err)
	}
	ver, err := exec.Command(py, "-c", "import sys; print(sys.version)").Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	sum := sha256.Sum256(append(append(reqs, 0), ver...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	venv := filepath.Join(cache, "celguard", "python-venv", hex.EncodeToString(sum[:8]))
	done := filepath.Join(venv, ".provisioned")
	if _, err := os.Stat(done); err == nil {
		return venv
	}
	if err := os.RemoveAll(venv); err != nil {
		t.Fatal(err)
	}
	run(t, ".", nil, py, "-m", "venv", venv)
	install(t, venv, mustAbs(t, "requirements-test.txt"))
	if err := os.WriteFile(done, reqs, 0o644); err != nil {
		t.Fatal(err)
	}
	return venv
}

// install installs the pins into venv: with uv, which does it in about a
// minute where pip takes several (it downloads in parallel), else with pip.
func install(t *testing.T, venv, reqFile string) {
	t.Helper()
	pip := filepath.Join(venv, "bin", "pip")
	err := try(".", nil, pip, "install", "--disable-pip-version-check", "-q", "uv=="+uvVersion)
	if err == nil {
		err = try(".", nil, filepath.Join(venv, "bin", "uv"), "pip", "install", "-q", "--python",
			filepath.Join(venv, "bin", "python"), "-r", reqFile)
		if err == nil {
			return
		}
	}
	t.Logf("installing with uv failed, using pip: %v", err)
	run(t, ".", nil, pip, "install", "--disable-pip-version-check", "-q", "-r", reqFile)
}

// try runs a command in dir; its error carries the command's output.
func try(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// run runs a command in dir with extra environment and fails the test with
// the command and its output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s\nrun it yourself to see more: cd python && %s %s",
			name, strings.Join(args, " "), dir, err, out.String(), strings.Join(env, " "), name+" "+strings.Join(args, " "))
	}
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), lastLines(out.String(), 5))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
