package logfile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriters: many goroutines and several processes append long
// lines to one file; every line arrives whole, none interleaved, none lost.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	const procs, goroutines, lines = 4, 8, 50
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		cmd.Env = append(os.Environ(), "LOGFILE_HELPER="+path, "LOGFILE_WRITER=proc"+strconv.Itoa(p))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	f, err := Open(path, Options{MaxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { writeLines(t, f, "goroutine"+strconv.Itoa(g), lines) })
	}
	wg.Wait()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if want := (procs + goroutines) * lines; len(got) != want {
		t.Fatalf("got %d lines, want %d", len(got), want)
	}
	for i, l := range got {
		if !validLine(l) {
			t.Fatalf("line %d is torn or interleaved: %.80q", i+1, l)
		}
	}
}

// TestHelperWriter is the body of the writer processes of
// TestConcurrentWriters.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv("LOGFILE_HELPER")
	if path == "" {
		return // not a helper run
	}
	f, err := Open(path, Options{MaxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, f, os.Getenv("LOGFILE_WRITER"), 50)
}

// writeLines appends n lines of 20 KB (past a pipe's atomic write size),
// each "writer i xxx...x writer i".
func writeLines(t *testing.T, f *File, writer string, n int) {
	for i := range n {
		tag := fmt.Sprintf("%s-%d", writer, i)
		line := tag + " " + strings.Repeat("x", 20000) + " " + tag + "\n"
		if err := f.Append([]byte(line)); err != nil {
			t.Error(err)
			return
		}
	}
}

func validLine(l string) bool {
	first, rest, ok := strings.Cut(l, " ")
	return ok && strings.HasSuffix(rest, " "+first) && strings.Count(rest, "x") == 20000
}

// TestRotation: a line that would pass the bound moves the file to FILE.1
// first; the log holds the newest lines, FILE.1 the ones before.
func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	f, err := Open(path, Options{MaxBytes: 100, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if err := f.Append([]byte(fmt.Sprintf("line %02d %s\n", i, strings.Repeat("y", 30)))); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	// 41-byte lines, two per 100 bytes: lines 6 | 4, 5 in .1.
	if !strings.HasPrefix(string(cur), "line 06") || strings.Count(string(cur), "\n") != 1 {
		t.Errorf("current file: %q", cur)
	}
	if !strings.HasPrefix(string(old), "line 04") || strings.Count(string(old), "\n") != 2 {
		t.Errorf("rotated file: %q", old)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v, %v", fi.Mode(), err)
	}
	if err := f.Append([]byte("no newline")); err == nil {
		t.Error("a line without its newline was accepted")
	}
	if err := f.Append([]byte("two\nlines\n")); err == nil {
		t.Error("two lines in one append were accepted")
	}
}
