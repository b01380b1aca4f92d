package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/store/statedir"
)

var built struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// binary builds the lean client into a directory of its own and returns
// its path.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "celguard-hook-")
		if built.err == nil {
			built.out, built.err = exec.Command("go", "build", "-o", filepath.Join(built.dir, "celguard-hook"), ".").CombinedOutput()
		}
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return filepath.Join(built.dir, "celguard-hook")
}

// besideFake copies the lean client into a new directory with a shell
// script as the celguard beside it.
func besideFake(t *testing.T, script string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	lean := filepath.Join(dir, "celguard-hook")
	if err := os.WriteFile(lean, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "celguard"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return lean
}

// TestFallbackRelaysTheFullHook: on any doubt the lean client runs
// `celguard hook ARGS...` beside it with the whole event on stdin, and
// relays its stdout, stderr and exit code exactly.
func TestFallbackRelaysTheFullHook(t *testing.T) {
	lean := besideFake(t, `echo "args: $*"; cat; echo "to stderr" >&2; exit 3`)
	event := strings.Repeat(`{"hook_event_name":"Notification"}`, 5000) // more than a pipe holds
	for _, env := range [][]string{
		{"CELGUARD_DAEMON=off"},                      // the daemon is off
		{"CELGUARD_TELEMETRY=otlp"},                  // the process is named in telemetry
		{"XDG_STATE_HOME=" + t.TempDir(), "HOME=/x"}, // no daemon
	} {
		for _, args := range [][]string{{"claude-code", "--policy", "/p.yaml"}, {"claude-code", "--server", "http://127.0.0.1:1"}, {"Bad/host"}} {
			cmd := exec.Command(lean, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stdin = strings.NewReader(event)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 3 {
				t.Fatalf("%q %q: exit %v, want 3 (stderr %s)", env, args, err, stderr.String())
			}
			if want := "args: hook " + strings.Join(args, " ") + "\n" + event; stdout.String() != want {
				t.Errorf("%q %q: stdout is not the full hook's (%d bytes, want %d)", env, args, stdout.Len(), len(want))
			}
			if stderr.String() != "to stderr\n" {
				t.Errorf("%q %q: stderr %q", env, args, stderr.String())
			}
		}
	}
}

// TestFallbackDiesByTheFullHooksSignal: a full hook killed by a signal
// is relayed as that signal.
func TestFallbackDiesByTheFullHooksSignal(t *testing.T) {
	lean := besideFake(t, `kill -TERM $$`)
	cmd := exec.Command(lean, "claude-code")
	cmd.Env = append(os.Environ(), "CELGUARD_DAEMON=off")
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the lean client ended with %v, want SIGTERM", ee)
	}
}

// TestNoFullHookBesideBlocks: without celguard beside it the lean client
// fails closed (exit 2, a block where exit codes are read) and says why.
func TestNoFullHookBesideBlocks(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	lean := filepath.Join(dir, "celguard-hook")
	if err := os.WriteFile(lean, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lean, "claude-code")
	cmd.Stdin = strings.NewReader("{}")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "no celguard beside") {
		t.Fatalf("exit %v: %s", err, out)
	}
}

// TestLinksNoPolicyEngine: the lean client's point is what it does not
// link: no policy engine, and neither package net nor anything that
// imports "C" (runtime/cgo), so that a build with cgo on, as `go install`
// makes it, is a static binary without net/http's initialisation. Of the
// MCP SDK it links only the jsonrpc package, the daemon's wire.
func TestLinksNoPolicyEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	heavy := regexp.MustCompile(`^(cel\.dev/|google\.golang\.org/|go\.yaml\.in/|gopkg\.in/yaml|github\.com/spf13/|github\.com/pingcap/|oras\.land/|go\.opentelemetry\.io/|github\.com/celguard/celguard/(eval|compile|policy|policies|hooks|serve|celenv|stdlib)$|net$|net/|crypto/tls|crypto/x509|runtime/cgo$|os/user$)`)
	sdk := regexp.MustCompile(`^github\.com/modelcontextprotocol/go-sdk/(jsonrpc|internal/(jsonrpc2|json|mcpgodebug))$`)
	linksWire := false
	for _, p := range strings.Fields(string(out)) {
		if heavy.MatchString(p) || (strings.HasPrefix(p, "github.com/modelcontextprotocol/") && !sdk.MatchString(p)) {
			t.Errorf("the lean client links %s", p)
		}
		linksWire = linksWire || p == "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	}
	if !linksWire {
		t.Error("the lean client does not link the SDK's jsonrpc package: is this list still the right one?")
	}
}

// TestStaticWithCgo: built with cgo on, as `go install ./cmd/...` builds
// it, the lean client is a static binary: no program interpreter (the
// dynamic loader, which costs every run).
func TestStaticWithCgo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF program headers: linux")
	}
	bin := filepath.Join(t.TempDir(), "celguard-hook")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("built with CGO_ENABLED=1 the lean client is dynamically linked (PT_INTERP): something it links imports net or \"C\"")
		}
		if p.Type == elf.PT_DYNAMIC {
			t.Fatal("built with CGO_ENABLED=1 the lean client has a dynamic section")
		}
	}
}

// The lean client's package initialisation, as GODEBUG=inittrace=1
// reports it (bytes and allocations do not depend on the machine's load):
// measured when the budget was set (issue 26), 39.8 KB in 274 allocations
// over 79 packages, against 2.7 MB in 18,500 for the full binary; 12.9 KB
// in 80 over 44 once it linked neither net nor net/http (the daemon's
// JSON-RPC wire).
const (
	initBudgetBytes  = 16 << 10
	initBudgetAllocs = 100
)

var initLine = regexp.MustCompile(`^init (\S+) @.* clock, (\d+) bytes, (\d+) allocs$`)

func TestInitBudget(t *testing.T) {
	cmd := exec.Command(binary(t), "claude-code")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "CELGUARD_DAEMON=off")
	cmd.Stdin = strings.NewReader(`{"hook_event_name":"Notification"}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run() // no celguard beside it: the trace is this test's business
	var bytesTotal, allocsTotal, packages int
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		packages++
		b, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		bytesTotal += b
		allocsTotal += a
	}
	if packages < 10 {
		t.Fatalf("inittrace reported %d packages; the trace format changed?\n%s", packages, stderr.String())
	}
	t.Logf("package init: %d bytes, %d allocations over %d packages", bytesTotal, allocsTotal, packages)
	if bytesTotal > initBudgetBytes || allocsTotal > initBudgetAllocs {
		t.Errorf("package init allocates %d bytes in %d allocations; the budget is %d bytes and %d allocations",
			bytesTotal, allocsTotal, initBudgetBytes, initBudgetAllocs)
	}
}

// TestBadDaemonFallsBack: a process on the daemon's socket that writes
// garbage, a line longer than the answer's bound, never answers, or
// closes early makes the lean client run `celguard hook` beside it, whose
// answer it relays, within the request's bound (--timeout and 2 s).
func TestBadDaemonFallsBack(t *testing.T) {
	lean := besideFake(t, `cat >/dev/null; echo '{"decision":"full"}'; exit 0`)
	full, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(lean), "celguard"))
	if err != nil {
		t.Fatal(err)
	}
	state, err := os.MkdirTemp("", "cgh") // short: a unix socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	if _, err := statedir.LoadKey(state); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": state, "XDG_CONFIG_HOME": "", "XDG_STATE_HOME": "", "CLAUDE_PROJECT_DIR": ""}
	args := []string{"claude-code", "--state-dir", state, "--timeout", "1s"}
	ha, err := daemonwire.ParseHookArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	sock, _, err := ha.Socket(full, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := daemonwire.CheckDir(filepath.Dir(sock), true); err != nil {
		t.Fatal(err)
	}
	for name, fake := range map[string]func(c net.Conn){
		"garbage": func(c net.Conn) {
			_, _ = daemonwire.ReadLine(c, 1<<20)
			_, _ = c.Write([]byte("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"stdout\":\"\"}}\n"))
		},
		"a line longer than the bound": func(c net.Conn) {
			chunk := bytes.Repeat([]byte("{"), 64<<10)
			for range daemonwire.MaxAnswerLine/len(chunk) + 16 {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		},
		"never answers": func(c net.Conn) { _, _ = io.Copy(io.Discard, c) },
		"closes early":  func(net.Conn) {},
	} {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			defer func() { ln.Close(); wg.Wait() }()
			wg.Go(func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					wg.Go(func() { defer c.Close(); fake(c) })
				}
			})
			cmd := exec.Command(lean, args...)
			cmd.Env = append(os.Environ(), "HOME="+state, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "CLAUDE_PROJECT_DIR=",
				"CELGUARD_DAEMON=", "CELGUARD_TELEMETRY=", "CELGUARD_HOOK_TRACE=1")
			cmd.Stdin = strings.NewReader(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if stdout.String() != "{\"decision\":\"full\"}\n" {
				t.Errorf("stdout %q: not the full hook's", stdout.String())
			}
			if !strings.Contains(stderr.String(), "celguard-hook: celguard hook decides: no answer") {
				t.Errorf("stderr %q: not handed on for want of an answer", stderr.String())
			}
		})
	}
}
