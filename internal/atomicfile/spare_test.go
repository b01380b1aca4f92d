package atomicfile

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestWriteSpareIsWrite replaces a file again and again through a spare,
// with contents longer and shorter than the last, and checks after each
// write that the file holds exactly what Write would have left (the same
// bytes and permissions), that nothing but the file and its spare is left,
// and, where the platform exchanges names, that the spare is in use (the
// file's inode alternates between two).
func TestWriteSpareIsWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	spare := filepath.Join(dir, TempPrefix+"s.json")
	ref := filepath.Join(t.TempDir(), "ref.json")
	r := rand.New(rand.NewPCG(1, 2))
	inodes := map[uint64]bool{}
	for i := 0; i < 200; i++ {
		data := make([]byte, r.IntN(9000))
		for j := range data {
			data[j] = byte(r.IntN(256))
		}
		if err := WriteSpare(path, spare, data, 0o600); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := Write(ref, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("write %d: the file holds %d bytes (%v), want the %d written", i, len(got), err, len(data))
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode() != 0o600 {
			t.Fatalf("write %d: mode %v, %v; want -rw-------", i, fi.Mode(), err)
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "s.json" && e.Name() != TempPrefix+"s.json" {
				t.Fatalf("write %d: %s left in the directory", i, e.Name())
			}
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && i > 0 {
			inodes[uint64(st.Ino)] = true
		}
	}
	if runtime.GOOS == "linux" && len(inodes) != 2 {
		t.Errorf("the file had %d inodes over 199 writes, want 2 (the file and its spare exchanged)", len(inodes))
	}
}

// TestWriteSpareNeverWritesThrough plants what the spare's name could be
// besides a spare: a symbolic link, a hard link to another file, a FIFO, a
// file with other permissions, a directory. The write must leave the
// other file as it was, not wait, and still replace the file.
func TestWriteSpareNeverWritesThrough(t *testing.T) {
	for _, kind := range []string{"symlink", "hardlink", "fifo", "mode", "dir"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.json")
			spare := filepath.Join(dir, TempPrefix+"s.json")
			other := filepath.Join(dir, "other")
			if err := os.WriteFile(other, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			var err error
			switch kind {
			case "symlink":
				err = os.Symlink(other, spare)
			case "hardlink":
				err = os.Link(other, spare)
			case "fifo":
				err = syscall.Mkfifo(spare, 0o600)
			case "mode":
				err = os.WriteFile(spare, []byte("spare"), 0o644)
				if err == nil {
					err = os.Chmod(spare, 0o644)
				}
			case "dir":
				err = os.Mkdir(spare, 0o700)
			}
			if err != nil {
				t.Skipf("cannot make a %s here: %v", kind, err)
			}
			if err := WriteSpare(path, spare, []byte("new"), 0o600); err != nil && kind != "dir" {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(other); string(got) != "keep" {
				t.Fatalf("the other file holds %q, want keep: written through the spare", got)
			}
			if kind == "dir" {
				return // a directory in the way: the file is still replaced or the write fails, never mixed
			}
			if got, _ := os.ReadFile(path); string(got) != "new" {
				t.Fatalf("the file holds %q, want new", got)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
				t.Fatalf("mode %v, %v; want -rw-------", fi.Mode(), err)
			}
			// And again, through the spare now in place.
			if err := WriteSpare(path, spare, []byte("newer"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != "newer" {
				t.Fatalf("the file holds %q, want newer", got)
			}
			if got, _ := os.ReadFile(other); string(got) != "keep" {
				t.Fatalf("the other file holds %q, want keep", got)
			}
		})
	}
}

// TestWriteSpareRemovedBetween removes the spare between writes (as the
// state directory's cleanup may): the next write still replaces the file.
func TestWriteSpareRemovedBetween(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	spare := filepath.Join(dir, TempPrefix+"s.json")
	for i, s := range []string{"a", "bb", "c", "dddd"} {
		if err := WriteSpare(path, spare, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != s {
			t.Fatalf("write %d: %q, want %q", i, got, s)
		}
		_ = os.Remove(spare)
	}
}
