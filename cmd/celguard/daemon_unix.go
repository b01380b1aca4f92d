//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// daemonSupported says the platform has what the daemon needs: unix
// sockets and file owners.
const daemonSupported = true

// startDetached starts exe with args in a session of its own, its
// standard streams closed, and does not wait for it: the daemon outlives
// the hook that starts it.
func startDetached(exe string, args []string) error {
	cmd := exec.Command(exe, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// lockDaemon takes the daemon's lock file, nil when another daemon holds it.
func lockDaemon(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	return f, nil
}
