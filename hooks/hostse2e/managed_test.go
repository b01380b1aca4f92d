package hostse2e

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/setup"
)

// TestCopilotManaged installs celguard's hook as Copilot CLI's policy
// hook (`celguard hook install copilot --managed`), with no hook in the
// user's or the project's settings, and runs Copilot on the block
// scenario: the policy hook alone refuses the call and the model reads the
// reason. Doctor reports the managed scope, and the file is one Copilot
// trusts (not writable by group or others).
//
// Copilot CLI 1.0.102 reads its policy hooks from a fixed directory,
// /etc/github-copilot/policy.d (seen in the files it opens; no variable or
// flag moves it), so the test writes there: only as root (CI's runner is),
// never over a celguard.json already there, and it removes what it wrote.
// It is not parallel: a policy hook applies to every Copilot run on the
// machine.
func TestCopilotManaged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real hosts")
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("writes Copilot CLI's policy directory under /etc: runs as root on Linux (CI)")
	}
	managed, err := setup.ManagedPath(hooks.Copilot, runtime.GOOS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(managed); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists: this machine has a managed celguard hook, which the test will not replace", managed)
	}
	removeCreated(t, managed)
	celguard := celguardBinary(t)
	bin := hostBinary(t, copilotPkg)
	h := hostsUnderTest[slices.IndexFunc(hostsUnderTest, func(h host) bool { return h.name == hooks.Copilot })]

	root := t.TempDir()
	home, state, work := filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policyFile := filepath.Join(root, "policy.yaml")
	writeFile(t, policyFile, e2ePolicy)
	m, url := startFakeModel(t, h.api, "touch celguard-blocked")
	env := append(baseEnv(home, root), h.setup(t, home, url)...)
	env = append(env, "CELGUARD_DAEMON=off")

	install := exec.Command(celguard, "hook", "install", h.name, "--managed", "--policy", policyFile, "--state-dir", state)
	install.Dir, install.Env = work, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("celguard hook install copilot --managed: %v\n%s", err, out)
	}
	info, err := os.Stat(managed)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o022 != 0 {
		t.Errorf("%s is %v: Copilot CLI ignores a policy file others can write", managed, info.Mode())
	}
	for _, user := range []string{filepath.Join(home, ".copilot", "hooks"), filepath.Join(work, ".github", "hooks")} {
		if entries, _ := os.ReadDir(user); len(entries) > 0 {
			t.Fatalf("the managed install wrote hooks in %s too", user)
		}
	}
	doctor := exec.Command(celguard, "doctor", h.name)
	doctor.Dir, doctor.Env = work, env
	dout, _ := doctor.CombinedOutput()
	if !strings.Contains(string(dout), managed) || !strings.Contains(string(dout), "managed") {
		t.Errorf("celguard doctor copilot does not report the managed scope (%s):\n%s", managed, dout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), hostRunTimeout)
	defer cancel()
	argv := h.run(bin, "Run this shell command in the current directory: touch celguard-blocked")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = work, env
	cmd.Stdin = bytes.NewReader(nil)
	cmd.WaitDelay = 10 * time.Second
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("copilot did not finish: %v\n%s", ctx.Err(), out)
	}
	mustExist(t, filepath.Join(work, "celguard-blocked"), false)
	mustReceive(t, m, "E2E-BLOCK-REASON", "")
	if t.Failed() {
		t.Logf("copilot output:\n%s", out)
	}
}

// removeCreated removes, at the end of the test, the file path and the
// directories above it that do not exist now.
func removeCreated(t *testing.T, path string) {
	t.Helper()
	var created []string
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		created = append(created, d)
	}
	t.Cleanup(func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("removing %s: %v", path, err)
		}
		for _, d := range created { // deepest first
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("removing %s: %v", d, err)
			}
		}
	})
}
