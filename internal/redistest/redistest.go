// Package redistest runs a real Redis (or Valkey) server for tests: it
// finds redis-server or valkey-server on PATH, installs redis-server with
// apt-get when it is missing and the tests run as root (CI on a fresh
// Debian or Ubuntu machine), and otherwise fails with the command to run.
// The server listens on 127.0.0.1 on a free port, keeps nothing on disk
// (--save "" --appendonly no) and is stopped when the test ends.
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/celguard/celguard/internal/aptget"
)

// program is redis-server (or valkey-server) and its package.
var program = aptget.Program{
	Names:   []string{"redis-server", "valkey-server"},
	Paths:   []string{"/usr/bin/redis-server", "/usr/bin/valkey-server", "/usr/local/bin/redis-server"},
	Package: "redis-server", What: "redis-server (or valkey-server)",
}

// InstallCommand is what a user who is not root runs to provide the server.
const InstallCommand = "sudo apt-get install -y redis-server"

var (
	findOnce sync.Once
	binary   string
	findErr  error
)

// Binary returns the path of redis-server or valkey-server, installing
// redis-server when it is missing and the process runs as root.
func Binary() (string, error) {
	findOnce.Do(func() { binary, findErr = aptget.Find(program) })
	return binary, findErr
}

// Server is a running server.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Port int

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a server for the test, stopped when the test ends. It fails
// the test when no server can be found, installed or started.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s.Port = port
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out bytes.Buffer
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %v", s.bin, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			_, werr := c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			n, rerr := c.Read(buf)
			c.Close()
			if werr == nil && rerr == nil && string(buf[:n]) == "+PONG\r\n" {
				s.cmd = cmd
				return nil
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("%s did not answer on %s: %s", s.bin, s.Addr(), aptget.Tail(out.Bytes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server (an outage); Restart starts it again on the same
// port, empty (nothing is kept on disk).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Restart starts a stopped server again on its port.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}
