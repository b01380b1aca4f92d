// Package unprivileged runs a test's checks of file permissions as a user
// whose permissions bind: root can write everywhere, so a check that a file
// is out of the user's reach passes vacuously when the tests run as root,
// as CI does. It is shared by the packages that make such checks (hooks,
// hooks/setup, store/statedir).
package unprivileged

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// env marks the test process Run starts.
const env = "CELGUARD_TEST_UNPRIVILEGED"

// Run runs body as a user whose file permissions bind. A
// process that is not root runs it directly. Root (as CI is) runs this one
// test again in a copy of the test binary as the user nobody, and fails
// when that run fails, so the check is never skipped for want of a user.
func Run(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits")
	}
	if os.Geteuid() != 0 || os.Getenv(env) == "1" {
		body(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "celguard-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, filepath.Base(exe))
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+t.Name()+"$", "-test.count", "1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env+"=1", "HOME="+dir, "TMPDIR="+os.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as the user nobody: %v\n%s", t.Name(), err, out)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
