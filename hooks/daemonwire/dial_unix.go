//go:build unix

package daemonwire

import (
	"os"
	"syscall"
	"time"
)

// dial connects to the unix stream socket at path with the syscall
// package (socket(2), connect(2)), not package net: the lean client links
// no net (see rpc.go). A connect that cannot complete at once (Linux: the
// listener's backlog is full) waits at most timeout (SO_SNDTIMEO, which
// bounds a unix socket's connect); the socket is then made non-blocking
// and handed to os.NewFile, whose poller makes deadlines hold.
func dial(path string, timeout time.Duration) (*os.File, error) {
	// As package net does where SOCK_CLOEXEC is not everywhere: no
	// process started meanwhile inherits the socket.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	tv := syscall.NsecToTimeval(timeout.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil && err != syscall.EISCONN { // EISCONN: connected while interrupted
		syscall.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(fd), path), nil
}
