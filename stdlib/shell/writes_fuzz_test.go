package shell

import "testing"

// FuzzWrites: Writes never panics, and its result stays within the bound
// the CEL cost model declares for shell.writes (stdlib's shellWritesSize):
// at most 4n+4+MaxInheritedRedirects targets of at most 3n+16 bytes, n the
// size of the command (its input, or its words and bodies when variables
// assigned earlier made them longer).
func FuzzWrites(f *testing.F) {
	for _, s := range []string{"cp -t d a b c", "mv a b c d/", "go build -o x/ ./a ./b", "tar xzfC a d",
		"sort --o=x -ro y", "patch -p1 <<'EOF'\n--- a/x\n+++ b/x\nEOF", "find ~ -name a -name b -delete",
		"python3 -c \"open('/x','w')\"", "apply_patch '*** Add File: a\n*** Move to: b'", "echo x > f &&& y",
		"GOBIN=/b go install ./a ./b@v1", "rsync -a a/ b/ c", "git apply --directory=d <<< '+++ b/x'",
		"cp -t a -t b -t c -t d x y z w v", "go build -o a -o b -o c ./x ./y ./z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<12 {
			return
		}
		for _, c := range Parse(in).Commands {
			n := len(in)
			size := 0
			for _, w := range c.Argv {
				size += len(w) + 1
			}
			for _, r := range c.Redirects {
				size += len(r.Target) + len(r.Body) + 1
			}
			for _, v := range c.Env {
				size += len(v) + 1
			}
			n = max(n, size)
			w, _ := c.Writes()
			if len(w) > 4*n+4+MaxInheritedRedirects {
				t.Fatalf("%d targets for a command of %d bytes: %q", len(w), n, w)
			}
			for _, x := range w {
				if len(x) > 3*n+16 {
					t.Fatalf("target of %d bytes for a command of %d: %q", len(x), n, x)
				}
			}
		}
	})
}
