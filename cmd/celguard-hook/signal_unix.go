//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// relaySignal ends this process by the signal that ended the full hook,
// so that the host sees what it would have seen running it directly.
func relaySignal(ps *os.ProcessState) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return
	}
	signal.Reset(ws.Signal())
	_ = syscall.Kill(os.Getpid(), ws.Signal())
	time.Sleep(time.Second) // the signal ends the process
}
