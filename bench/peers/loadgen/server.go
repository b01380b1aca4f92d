package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// server is one target's server process: this binary run with -serve.
type server struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
	pid   int
	// procs is the server's GOMAXPROCS, as it reported it.
	procs int
}

// spawn starts this binary with args (-serve KIND ...) on cpus (nil: any
// CPU) and waits for its first line, "URL GOMAXPROCS". The process runs
// until its standard input is closed (stop).
func spawn(args []string, cpus *cpuSet) (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startOn(cmd, cpus); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		if _, err := fmt.Sscanf(l, "%s %d", &s.url, &s.procs); err != nil || !strings.HasPrefix(s.url, "http://") {
			s.stop()
			return nil, fmt.Errorf("the server process said %q", l)
		}
	case <-time.After(5 * time.Minute): // OPA's start under valgrind takes a while
		s.stop()
		return nil, fmt.Errorf("the server process did not listen within 5 minutes")
	}
	return s, nil
}

// stop closes the server's standard input and waits for it to exit
// (writing its profiles, if asked). SIGCHLD is ignored first: its
// delivery while this process waits trips an assertion of valgrind's
// callgrind (scripts/loadgen-instr.sh counts both processes); with it
// ignored, the kernel reaps the child itself and Wait still returns only
// once it has exited (with ECHILD, which is not an error here).
func (s *server) stop() {
	signal.Ignore(syscall.SIGCHLD)
	s.stdin.Close()
	_ = s.cmd.Wait()
}

// serveChild runs the server of kind on a free loopback port, prints
// "URL GOMAXPROCS" and serves until its standard input closes.
func serveChild(kind, storeURL string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var url string
	var err error
	switch kind {
	case "celguard":
		url, err = startCelguard(ctx, storeURL)
	case "opa":
		url, err = startOPA(ctx)
	case "raw":
		url, err = startRaw()
	case "null":
		url, err = startNull()
	default:
		err = fmt.Errorf("-serve: no server %q", kind)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s %d\n", url, runtime.GOMAXPROCS(0))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}
