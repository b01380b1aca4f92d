package daemonwire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tree is a project as an attacker in the repository finds it: a policy
// directory, a trust store and a .git.
func tree(t *testing.T) (root string, roots []Root) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{".celguard/sub", ".git", "config"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, ".celguard", "a.yaml"), "a")
	write(t, filepath.Join(root, ".celguard", "sub", "b.yaml"), "b")
	write(t, filepath.Join(root, "config", "trust.json"), "{}")
	return root, []Root{
		{Path: filepath.Join(root, "work", ".git")},
		{Path: filepath.Join(root, ".git")},
		{Path: filepath.Join(root, ".celguard"), Tree: true},
		{Path: filepath.Join(root, ".agents", "guards"), Tree: true},
		{Path: filepath.Join(root, "config", "trust.json"), Tree: true},
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManifestCheck: a snapshot checks against the same files, and every
// change an attacker in the repository can make to what discovery reads
// makes it fail; a change outside the roots does not.
func TestManifestCheck(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		stale  bool
	}{
		{"nothing", func(*testing.T, string) {}, false},
		{"a file outside the roots", func(t *testing.T, root string) { write(t, filepath.Join(root, "README"), "x") }, false},
		{"a new policy file", func(t *testing.T, root string) { write(t, filepath.Join(root, ".celguard", "new.yaml"), "n") }, true},
		{"a new file in a subdirectory", func(t *testing.T, root string) { write(t, filepath.Join(root, ".celguard", "sub", "c.yml"), "c") }, true},
		{"an edited policy file", func(t *testing.T, root string) { write(t, filepath.Join(root, ".celguard", "a.yaml"), "A") }, true},
		{"a removed policy file", func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, ".celguard", "sub", "b.yaml"))) }, true},
		{"an edited trust store", func(t *testing.T, root string) { write(t, filepath.Join(root, "config", "trust.json"), `{"x":1}`) }, true},
		{"a new guard directory", func(t *testing.T, root string) {
			must(t, os.MkdirAll(filepath.Join(root, ".agents", "guards"), 0o755))
		}, true},
		{"a .git below the root (another project)", func(t *testing.T, root string) {
			must(t, os.MkdirAll(filepath.Join(root, "work", ".git"), 0o755))
		}, true},
		{"the policy directory swapped for a link", func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, ".celguard"), filepath.Join(root, "elsewhere")))
			must(t, os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, ".celguard")))
		}, true},
		{"a mode changed", func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, ".celguard", "a.yaml"), 0o600)) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, roots := tree(t)
			m, err := Snapshot(roots)
			must(t, err)
			back, err := DecodeManifest(m.Encode())
			must(t, err)
			if !back.Equal(m) {
				t.Fatal("the manifest does not survive its encoding")
			}
			c.change(t, root)
			err = back.Check()
			if c.stale && err == nil {
				t.Fatal("the change was not seen")
			}
			if !c.stale && err != nil {
				t.Fatalf("no change, and Check says %v", err)
			}
		})
	}
}

// TestManifestLinks: a link is followed, and retargeting it is a change
// even when the new target holds the same files.
func TestManifestLinks(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
		write(t, filepath.Join(root, d, "p.yaml"), "same")
	}
	link := filepath.Join(root, "link")
	must(t, os.Symlink(filepath.Join(root, "a"), link))
	m, err := Snapshot([]Root{{Path: link, Tree: true}})
	must(t, err)
	must(t, m.Check())
	must(t, os.Remove(link))
	must(t, os.Symlink(filepath.Join(root, "b"), link))
	if m.Check() == nil {
		t.Fatal("a retargeted link was not seen")
	}
}

func TestSnapshotBounds(t *testing.T) {
	if _, err := Snapshot([]Root{{Path: "relative"}}); err == nil {
		t.Fatal("a relative root was accepted")
	}
	root := t.TempDir()
	for i := range MaxEntries + 1 {
		write(t, filepath.Join(root, "f"+strconv.Itoa(i)), "")
	}
	if _, err := Snapshot([]Root{{Path: root, Tree: true}}); err != ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSumOfIsTheFormattedSum: sumOf hashes each entry as
// fmt's "%d:%s%d:%s%d:%s" of its length-prefixed fields, as manifests have
// always been summed (a client and a daemon of other builds agree).
func TestSumOfIsTheFormattedSum(t *testing.T) {
	want := func(entries []Entry) string {
		h := sha256.New()
		for _, e := range entries {
			fmt.Fprintf(h, "%d:%s%d:%s%d:%s", len(e.Kind), e.Kind, len(e.Path), e.Path, len(e.Value), e.Value)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	cases := [][]Entry{
		nil,
		{{}},
		{{Kind: "file", Path: "/a/b", Value: "100644 1000 deadbeef"}},
		{{Kind: "resolve", Path: "/tmp/x", Value: ""}, {Kind: "dir", Path: "/tmp/%d%s", Value: "40755 0\x00ünï"}},
		{{Kind: "link", Path: strings.Repeat("p", 1000), Value: "1:2:3:"}, {Kind: "absent", Path: "/", Value: "%"}},
	}
	for _, c := range cases {
		if got := sumOf(c); got != want(c) {
			t.Errorf("sumOf(%q) = %s, want %s", c, got, want(c))
		}
	}
}

// TestSnapshotMemoIsEvalSymlinks builds random trees of directories,
// files and symbolic links (absolute, relative, dangling, looping, through
// files and through "..") and checks, for random paths in them, that a
// snapshot's resolution is filepath.EvalSymlinks' (the same result, or the
// same absence), and that a snapshot of many roots at once is the same
// manifest as one taken without its memory of leading directories.
func TestSnapshotMemoIsEvalSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix paths")
	}
	r := rand.New(rand.NewPCG(26, 5))
	names := []string{"a", "b", "c", ".git", "d e"}
	for round := 0; round < 40; round++ {
		base, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		var paths []string
		var dirs = []string{base}
		for i := 0; i < 30; i++ {
			parent := dirs[r.IntN(len(dirs))]
			p := filepath.Join(parent, names[r.IntN(len(names))])
			paths = append(paths, p)
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			switch r.IntN(5) {
			case 0, 1:
				if os.Mkdir(p, 0o755) == nil {
					dirs = append(dirs, p)
				}
			case 2:
				_ = os.WriteFile(p, []byte("x"), 0o644)
			case 3:
				_ = os.Symlink(paths[r.IntN(len(paths))], p) // absolute, maybe to itself
			case 4:
				rel := []string{"..", "../a", "a/b", ".", "../../c", "nowhere"}[r.IntN(6)]
				_ = os.Symlink(rel, p)
			}
		}
		var roots []Root
		for i := 0; i < 20; i++ {
			p := paths[r.IntN(len(paths))]
			if r.IntN(3) == 0 {
				p = filepath.Join(p, names[r.IntN(len(names))])
			}
			roots = append(roots, Root{Path: p, Tree: r.IntN(4) == 0})
			want, werr := filepath.EvalSymlinks(p)
			got, gerr := (&snapshot{}).evalSymlinks(p)
			if absent(werr) || absent(gerr) {
				require.True(t, absent(werr) && absent(gerr), "%s: %v, EvalSymlinks %v", p, gerr, werr)
				continue
			}
			require.Equal(t, werr == nil, gerr == nil, "%s: %v, EvalSymlinks %v", p, gerr, werr)
			require.Equal(t, want, got, p)
		}
		with, err1 := Snapshot(roots)
		without, err2 := snapshotWith(roots, true)
		require.Equal(t, err1 == nil, err2 == nil, "%v / %v", err1, err2)
		if err1 == nil {
			require.Equal(t, without.Entries, with.Entries)
		}
	}
}
