package shell

import (
	"slices"
	"testing"
)

// TestWrites pins the write targets of each form of each program: the
// targets must include want (in any order, with others allowed unless
// exact) and exclude none of notWant.
func TestWrites(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		notWant []string
		exact   bool
		unknown bool // the program is not in the table
	}{
		// redirects
		{in: "echo x > f", want: []string{"f"}, exact: true},
		{in: "echo x >> f", want: []string{"f"}, exact: true},
		{in: "echo x &> f", want: []string{"f"}, exact: true},
		{in: "echo x >| f", want: []string{"f"}, exact: true},
		{in: "echo x 1> f 2>&1", want: []string{"f"}, exact: true},
		{in: "echo x >& f", want: []string{"f"}, exact: true},
		{in: "cat > f <<EOF\nhi\nEOF", want: []string{"f"}, exact: true},
		{in: "cat < f", want: []string{}, exact: true},
		{in: "ls -la ~/.config", want: []string{}, exact: true},
		// tee
		{in: "tee f", want: []string{"f"}, exact: true},
		{in: "tee -a f g", want: []string{"f", "g"}, exact: true},
		// cp and mv
		{in: "cp a b", want: []string{"b", "b/a"}, notWant: []string{"a"}},
		{in: "cp -r a b/", want: []string{"b/", "b/a"}, notWant: []string{"a"}},
		{in: "cp a b -S .bak", want: []string{"b"}, notWant: []string{".bak"}},
		{in: "cp -t d a b", want: []string{"d", "d/a", "d/b"}, notWant: []string{"a", "b"}},
		{in: "cp -t d -t e a", want: []string{"d", "e", "e/a"}, exact: true},
		{in: "go build -o x -o y/ ./a", want: []string{"x", "y/", "y/a"}, exact: true},
		{in: "cp -rtd a", want: []string{"d", "d/a"}},
		{in: "cp --target-directory=d a", want: []string{"d", "d/a"}},
		{in: "cp --target=d a", want: []string{"d", "d/a"}},
		{in: "cp --targ d a", want: []string{"d", "d/a"}},
		{in: "cp x/* ~/go/bin/", want: []string{"~/go/bin/", "~/go/bin/*"}},
		{in: "cp -r src/. dst", want: []string{"dst/**"}},
		{in: "cp -s a b", want: []string{"a", "b"}},
		{in: "mv a b", want: []string{"a", "b", "b/a", "a/**"}},
		{in: "mv -t d a", want: []string{"a", "d/a", "a/**"}},
		{in: "install -m 755 x /usr/local/bin/celguard", want: []string{"/usr/local/bin/celguard"}, notWant: []string{"755", "x"}},
		{in: "install -d a b", want: []string{"a", "b"}},
		{in: "ln -s target name", want: []string{"name", "name/target"}, exact: true},
		{in: "ln target name", want: []string{"target", "name", "target/**"}},
		{in: "ln -s target name && echo x > name/f", want: []string{"target", "name", "target/**"}},
		{in: "rsync -a src/ dst", want: []string{"dst", "dst/**"}},
		{in: "rsync -a -e ssh src dst", want: []string{"dst", "dst/src"}, notWant: []string{"ssh"}},
		{in: "rsync --log-file=l a b", want: []string{"l", "b"}},
		// dd, sort, curl, wget
		{in: "dd if=a of=b bs=1M", want: []string{"b"}, exact: true},
		{in: "sort -o out in", want: []string{"out"}, exact: true},
		{in: "sort -oout in", want: []string{"out"}, exact: true},
		{in: "sort -ro out in", want: []string{"out"}, exact: true},
		{in: "sort --output=out in", want: []string{"out"}, exact: true},
		{in: "sort --output out in", want: []string{"out"}, exact: true},
		{in: "sort --o out in", want: []string{"out"}, exact: true},
		{in: "sort --ou=out in", want: []string{"out"}, exact: true},
		{in: "sort --outp out in", want: []string{"out"}, exact: true},
		{in: "sort -k 2 -t , in", want: []string{}, exact: true},
		{in: "curl -o f https://x", want: []string{"f"}, exact: true},
		{in: "curl -sSLo f https://x", want: []string{"f"}, exact: true},
		{in: "curl --output f https://x", want: []string{"f"}, exact: true},
		{in: "curl -H 'a: b' https://x", want: []string{}, exact: true},
		{in: "wget -O f https://x", want: []string{"f"}, exact: true},
		{in: "wget -P d https://x", want: []string{"d/**"}, exact: true},
		// files changed in place, created, deleted
		{in: "truncate -s 0 f", want: []string{"f"}},
		{in: "touch f", want: []string{"f"}, exact: true},
		{in: "rm f", want: []string{"f"}, exact: true},
		{in: "rm -rf d", want: []string{"d", "d/**"}, exact: true},
		{in: "chmod 600 f", want: []string{"f"}},
		{in: "chmod -R u+w d", want: []string{"d", "d/**"}},
		{in: "sed -i s/a/b/ f", want: []string{"f"}, unknown: true},
		{in: "perl -pi -e 's/a/$1/' f g", want: []string{"f", "g"}, exact: true},
		{in: "perl -i.bak -pe 's/a/b/' f", want: []string{"f", "f.bak"}, exact: true},
		{in: "perl -ne 's/a/b/' f", want: []string{}, exact: true},
		{in: "perl -pi -e 'print' f", want: []string{"print", "f"}, unknown: true},
		{in: "perl x.pl f", want: []string{"x.pl", "f"}, unknown: true},
		{in: "sed --in-place s/a/b/ f", want: []string{"f"}, unknown: true},
		{in: "sed -n 's/a/b/w out' f", want: []string{"out"}, unknown: true},
		{in: "perl -pi -e s/a/b/ f", want: []string{"f"}, exact: true},
		{in: `python3 -c "open('/x/y','w')"`, want: []string{"/x/y"}, unknown: true},
		{in: "tool -o/x/y", want: []string{"/x/y"}, unknown: true},
		{in: "tool --out=/x/y", want: []string{"/x/y"}, unknown: true},
		// go
		{in: "go build -o ./bin/app ./cmd/app", want: []string{"./bin/app", "./bin/app/app"}, exact: true},
		{in: "go build -o ~/go/bin/ ./cmd/celguard", want: []string{"~/go/bin/celguard"}},
		{in: "go build -o=x .", want: []string{"x", "x/*"}, exact: true},
		{in: "go build --o x .", want: []string{"x"}},
		{in: "go test -coverprofile=c.out ./...", want: []string{"c.out"}},
		{in: "go test -cpuprofile c.prof -memprofile m.prof -blockprofile b -mutexprofile mu -trace t", want: []string{"c.prof", "m.prof", "b", "mu", "t"}},
		{in: "go test --coverprofile c.out", want: []string{"c.out"}},
		{in: "go test -outputdir d -cpuprofile c.prof", want: []string{"c.prof", "d/c.prof"}},
		{in: "go test -o t.test ./x", want: []string{"t.test"}},
		{in: "go test -run TestX -count 1 ./...", want: []string{}, exact: true},
		{in: "go install ./cmd/celguard", want: []string{"~/go/bin/celguard"}, exact: true},
		{in: "go install github.com/celguard/celguard/cmd/celguard@latest", want: []string{"~/go/bin/celguard"}, exact: true},
		{in: "GOBIN=/opt/bin go install ./x", want: []string{"/opt/bin/x"}, exact: true},
		{in: "go install ./...", want: []string{"~/go/bin/*"}, exact: true},
		{in: "go vet ./...", want: []string{}, exact: true},
		{in: "go run ./x /y/z", want: []string{"/y/z"}, unknown: true},
		// patch tools, archives
		{in: "patch f fix.diff", want: []string{"f"}, notWant: []string{"fix.diff"}},
		{in: "patch -p1 -d d < fix.diff", want: []string{"d/**"}, exact: true},
		{in: "patch -p1 <<'EOF'\n--- a/x/y\n+++ b/x/y\n@@\nEOF", want: []string{"x/y", "b/x/y"}},
		{in: "git apply <<'EOF'\ndiff --git a/.celguard/p.yaml b/.celguard/p.yaml\n+++ b/.celguard/p.yaml\nEOF", want: []string{".celguard/p.yaml"}},
		{in: "git apply --directory=d x.patch", want: []string{"d/**"}, exact: true},
		{in: "git -C r checkout -- f", want: []string{"f"}, exact: true},
		{in: "git status", want: []string{}, exact: true},
		{in: "git clone https://x d", want: []string{"d/**"}, exact: true},
		{in: "tar -x -C d -f a.tar", want: []string{"d/**", "a.tar"}, exact: true},
		{in: "tar xzf a.tgz -C d", want: []string{"d/**", "a.tgz"}, exact: true},
		{in: "tar -czf out.tgz -C d .", want: []string{"out.tgz"}, exact: true},
		{in: "tar --extract --directory=d --file=a.tar", want: []string{"d/**", "a.tar"}, exact: true},
		{in: "tar -xPf a.tar", want: []string{"/**", "a.tar"}, exact: true},
		{in: "unzip a.zip -d d", want: []string{"d/**"}, exact: true},
		{in: "unzip -dd a.zip", want: []string{"d/**"}, exact: true},
		{in: "find ~ -name trust.json -delete", want: []string{"~", "~/**/trust.json"}, exact: true},
		{in: "find a b -name x -iname 'y,z' -delete", want: []string{"a", "b", "a/**/x", "a/**/[yY][,][zZ]", "b/**/x", "b/**/[yY][,][zZ]"}, exact: true},
		{in: "find . -name x -exec rm -rf {} +", want: []string{"."}, exact: true},
		{in: "find . ! -name '*.go' -delete", want: []string{".", "./**"}, exact: true},
		{in: "find . -not -name '*.go' -delete", want: []string{".", "./**"}, exact: true},
		{in: "find . -name '*.o' -o -type f -delete", want: []string{".", "./**"}, exact: true},
		{in: "find . -name '*.o' -o -name '*.a' -delete", want: []string{".", "./**/*.o", "./**/*.a"}, exact: true},
		{in: "find . -iname '[a]' -delete", want: []string{".", "./**"}, exact: true},
		{in: "find . -delete", want: []string{".", "./**"}, exact: true},
		// A glob character the shell takes literally is escaped as a
		// class of itself; one it expands stays as written.
		{in: "touch 'a*'", want: []string{"a[*]"}, exact: true},
		{in: `touch "x(1)" a\?`, want: []string{"x[(]1[)]", "a[?]"}, exact: true},
		{in: "touch a* '.c'*", want: []string{"a*", ".c*"}, exact: true},
		{in: "echo hi > 'out[1].txt'", want: []string{"out[[]1].txt"}, exact: true},
		{in: "rm -r 'b{1,2}'", want: []string{"b[{]1[,]2[}]", "b[{]1[,]2[}]/**"}, exact: true},
		{in: "v='*'; rm \"$v\"", want: []string{"[*]"}, exact: true},
		{in: "v='*'; rm $v", want: []string{"*"}, exact: true},
		{in: "rm @(a|b) .@(c)", want: []string{"@(a|b)", ".@(c)"}, exact: true},
		// A program that may glob its own words keeps them as written.
		{in: "node -e 'console.log(1)'", want: []string{"console.log(1)"}, unknown: true},
		{in: "find . -name '*.o' -delete", want: []string{".", "./**/*.o"}, exact: true},
		{in: "find d -type f", want: []string{}, exact: true},
		{in: "find d -fprint out", want: []string{"out"}, exact: true},
		{in: "bash -c 'echo > f'", want: []string{}, exact: true}, // the nested echo writes f
		{in: "bash x.sh /y", want: []string{"/y"}, unknown: true},
		{in: "bash -c 'cp x \"$1\"' sh /y", want: []string{"sh", "/y"}, exact: true},
		{in: "echo x > /y &&& oops", want: []string{"/y"}, unknown: true},
		{in: "celguard lint .celguard", want: []string{}, exact: true},
		{in: "celguard init .celguard", want: []string{".celguard/**"}, exact: true},
		{in: "apply_patch '*** Begin Patch\n  *** Add File: a/b.txt\r\n+x\n*** End Patch'", want: []string{"a/b.txt"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			line := Parse(tc.in)
			if len(line.Commands) == 0 {
				t.Fatalf("no command")
			}
			c := line.Commands[len(line.Commands)-1]
			for _, x := range line.Commands {
				if x.Program != "" {
					c = x
					break
				}
			}
			got, known := c.Writes()
			if known == tc.unknown {
				t.Errorf("known = %v", known)
			}
			if tc.exact {
				if !sameSet(got, tc.want) {
					t.Errorf("writes = %q, want exactly %q", got, tc.want)
				}
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("writes = %q, want %q among them", got, w)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(got, w) {
					t.Errorf("writes = %q, want no %q", got, w)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

func TestPatchPaths(t *testing.T) {
	got := PatchPaths("*** Begin Patch\r\n   *** Update File: ~/.claude/settings.json\r\n*** Move to:  x/y \n--- /dev/null\n+++ b/new\t2020-01-01\n")
	for _, w := range []string{"~/.claude/settings.json", "x/y", "new", "b/new"} {
		if !slices.Contains(got, w) {
			t.Errorf("PatchPaths = %q, want %q", got, w)
		}
	}
	if slices.Contains(got, "/dev/null") {
		t.Errorf("PatchPaths = %q: /dev/null is no file", got)
	}
}

// TestFindExecWrites: the command a find -exec runs reads {} as the paths
// find passes, one analysis per starting point.
func TestFindExecWrites(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][]string // the writes of each command after find
	}{
		{in: "find . -name __pycache__ -type d -exec rm -rf {} +", want: [][]string{{"./**/__pycache__", "./**/__pycache__/**"}}},
		{in: "find a /b -name '*.pyc' -exec rm -f {} ';'", want: [][]string{{"a/**/*.pyc"}, {"/b/**/*.pyc"}}},
		{in: "find . -exec rm -rf {} +", want: [][]string{{"./**", "./**/**"}}},
		{in: "find . -name x -exec mv {} {}.bak ';'", want: [][]string{{"./**/x.bak", "./**/x.bak/x", "./**/x", "./**/x.bak", "./**/x/**"}}},
		{in: "find . -type f -exec wc -l {} +", want: [][]string{{}}},
		{in: "find . -name '*.yaml' -exec sed -i s/a/b/ {} +", want: [][]string{{"-i", "s/a/b/", "./**/*.yaml"}}},
	} {
		cmds := Parse(tc.in).Commands
		if len(cmds) != len(tc.want)+1 {
			t.Errorf("%s: %d commands, want %d", tc.in, len(cmds), len(tc.want)+1)
			continue
		}
		for i, want := range tc.want {
			got, _ := cmds[i+1].Writes()
			if !slices.Equal(got, want) {
				t.Errorf("%s: command %d (%s) writes %q, want %q", tc.in, i+1, cmds[i+1].Text, got, want)
			}
		}
	}
}
