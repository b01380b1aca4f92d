package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Executable is the absolute path of the running celguard binary, with
// symbolic links resolved: what `celguard hook install` writes into a host's
// settings, so that the host runs this very file and not whatever a
// directory on PATH holds when the hook runs (a `go build -o
// ~/go/bin/celguard` would replace that).
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the path of the celguard binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", fmt.Errorf("cannot resolve the path of the celguard binary: %w", err)
	}
	return filepath.Abs(exe)
}

// BinaryWarnings says why the binary a hook command runs may not stay the
// one installed: a name looked up on PATH when the hook runs, or a file the
// current user can replace (its own permissions, or those of a directory on
// its path). The agent runs as the user, so whatever the user can write the
// agent can, unless a rule stops it; only a binary the user cannot write is
// out of its reach. It returns nothing for a binary only an administrator
// can replace.
func BinaryWarnings(path string) []string {
	const fix = "install celguard where only an administrator can write (e.g. sudo install -m 0755 celguard /usr/local/bin/) and install the hooks again with that binary"
	if !filepath.IsAbs(path) {
		return []string{fmt.Sprintf("the hook runs %q, looked up on PATH when it runs: a binary put earlier on PATH (by the agent too) would run instead; %s", path, fix)}
	}
	if _, err := os.Stat(path); err != nil {
		return []string{fmt.Sprintf("the hook runs %s, which cannot be checked (%v)", path, err)}
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if writable(p) {
			what := "the directory " + p
			if p == filepath.Clean(path) {
				what = "the file itself"
			}
			return []string{fmt.Sprintf("the hook runs %s, and %s is writable by you, so also by the agent the hook guards: it could replace the binary; %s", path, what, fix)}
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

// LeanName is the lean hook client's file name (cmd/celguard-hook): the
// command `celguard hook install` writes when it sits beside celguard.
const LeanName = "celguard-hook"

// LeanBeside is the lean hook client beside the celguard binary at
// celguard, when there is one: an executable regular file named LeanName
// in the same directory. Its command line is `celguard-hook HOST FLAGS`,
// which answers as `celguard hook HOST FLAGS` does (it asks the decision
// daemon, and runs that command beside it on any doubt).
func LeanBeside(celguard string) (string, bool) {
	if !filepath.IsAbs(celguard) {
		return "", false
	}
	p := filepath.Join(filepath.Dir(celguard), LeanName)
	if runtime.GOOS == "windows" {
		p += ".exe"
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 && runtime.GOOS != "windows" {
		return "", false
	}
	return p, true
}

// isLean reports whether word, a command's first word as sh reads it,
// runs the lean hook client.
func isLean(word string) bool {
	base := filepath.Base(word)
	return base == LeanName || base == LeanName+".exe"
}
