// Package aptget finds a program the tests need (a server, a browser) and,
// when it is missing and the tests run as root on a Debian or Ubuntu
// machine (CI on a fresh machine), installs its package with apt-get,
// running apt-get update first only when the install fails without it.
// Otherwise it fails with the command a person runs. It is the one
// find-or-install of the test services (internal/redistest,
// internal/registrytest, internal/browsertest).
package aptget

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
)

// Program is what to find and which package provides it.
type Program struct {
	// Names are looked up on PATH, in order.
	Names []string
	// Paths are absolute paths tried after PATH, in order.
	Paths []string
	// Package is the Debian package that provides it.
	Package string
	// What names it in errors ("redis-server (or valkey-server)").
	What string
}

// InstallCommand is what a person who is not root runs to provide p.
func (p Program) InstallCommand() string { return "sudo apt-get install -y " + p.Package }

// Find returns the path of p, installing p.Package when it is missing and
// the process runs as root with apt-get.
func Find(p Program) (string, error) {
	if path, ok := p.lookup(); ok {
		return path, nil
	}
	what := p.What
	if what == "" {
		what = p.Package
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil || os.Geteuid() != 0 {
		return "", fmt.Errorf("%s is not installed; run: %s", what, p.InstallCommand())
	}
	install := func() ([]byte, error) {
		cmd := exec.Command(apt, "-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", p.Package)
		// RUNLEVEL=1 keeps a package's service from starting.
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "RUNLEVEL=1")
		return cmd.CombinedOutput()
	}
	if _, err := install(); err != nil {
		// A fresh machine may have no package lists yet.
		upd := exec.Command(apt, "-o", "DPkg::Lock::Timeout=600", "update")
		if uout, uerr := upd.CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get update failed (%v): %s", uerr, Tail(uout))
		}
		if out, err := install(); err != nil {
			return "", fmt.Errorf("apt-get install -y %s failed (%v): %s", p.Package, err, Tail(out))
		}
	}
	if path, ok := p.lookup(); ok {
		return path, nil
	}
	return "", fmt.Errorf("apt-get installed %s, but %s is still not found", p.Package, what)
}

func (p Program) lookup() (string, bool) {
	for _, name := range p.Names {
		if path, err := exec.LookPath(name); err == nil {
			return path, true
		}
	}
	for _, path := range p.Paths {
		if _, err := os.Stat(path); err == nil {
			return path, true
		}
	}
	return "", false
}

// Tail is the end of a command's output, for an error.
func Tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}
