package stdlib

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/stdlib/shell"
)

// The write analysis against the shell it models (issue 25, point 7):
// commands built from quoted and unquoted glob syntax (classes, braces,
// extglob groups, parentheses, dots) are analysed with shell.writes and
// glob.couldMatchShell, as the self-protection policy does, and run
// through real bash (extglob on, dotglob off) in a scratch directory that
// holds protected places. Two properties:
//
//   - sound: when bash's expansion of the word reaches a protected place
//     (a word names it or a path inside it, or a recursive rm names a
//     directory above it), the analysis says it could;
//   - exact for words that cannot be globs: when every glob character of
//     the word is quoted or escaped, the analysis reaches a protected place
//     only when bash's expansion does.

// bashPieces are the pieces words are built from; glob is true for a piece
// with glob syntax the shell expands.
var bashPieces = []struct {
	text string
	glob bool
}{
	{"a", false}, {"x", false}, {".", false}, {".c", false}, {".celguard", false}, {"celguard", false},
	{"sub/", false}, {"/", false}, {"console.log", false}, {"-", false}, {"_", false},
	{"*", true}, {"?", true}, {"[a-z]", true}, {"[.]", true}, {"[!x]", true}, {"{a,.celguard}", true},
	{"{x,y}", true}, {"@(x|.celguard)", true}, {"!(x)", true}, {"*(.c*)", true}, {"+(a)", true},
	{"?(.celguard)", true}, {"@(celguard)", true},
	{"'*'", false}, {`"*"`, false}, {"'('", false}, {"')'", false}, {"'(1)'", false}, {`\*`, false},
	{`\(`, false}, {`\)`, false}, {"'[a]'", false}, {`"{a,b}"`, false}, {"'?'", false},
	{"'.celguard'", false}, {`"(sys.version)"`, false}, {"'import sys; print(sys.version)'", false},
	{"'.c*'", false}, {`'@(x)'`, false},
}

// bashTemplates are the commands a word is given to; tree is true for one
// that writes everything under the word.
var bashTemplates = []struct {
	format string
	tree   bool
}{
	{"touch %s", false},
	{"rm -rf %s", true},
	{"echo x > %s", false},
	{"mkdir -p %s", false},
	{"tee -a %s", false},
	{"frobnicate --out %s", false}, // a program the table does not know
}

// bashProtected are the protected places of the scratch directory; every
// one exists, with a file inside.
var bashProtected = []string{".celguard", "sub/.celguard", ".claude/settings.json"}

func bashScratch(t testing.TB) (bash, dir string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to check the write analysis against it: %v", err)
	}
	dir = t.TempDir()
	for _, f := range []string{".celguard/policy.yaml", "sub/.celguard/x.yaml", ".claude/settings.json",
		"a", "x", "celguard", "console.log", "sub/a", "x(1)", "(1)", "y"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return bash, dir
}

// bashWord builds a word from the pieces chosen by data; literal is true
// when no piece is glob syntax the shell expands.
func bashWord(data []byte) (word string, literal bool) {
	literal = true
	var b strings.Builder
	for i, c := range data {
		if i == 5 {
			break
		}
		p := bashPieces[int(c)%len(bashPieces)]
		b.WriteString(p.text)
		literal = literal && !p.glob
	}
	return b.String(), literal
}

// bashExpand returns the words bash expands word into, run in dir.
func bashExpand(t *testing.T, bash, dir, word string) ([]string, bool) {
	cmd := exec.Command(bash, "--norc", "--noprofile", "-O", "extglob", "-c", "printf '%s\\0' "+word)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	out, err := cmd.Output()
	if err != nil {
		return nil, false // a word bash refuses (a syntax error) proves nothing
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), true
}

// within reports whether p is base or lies under it.
func within(p, base string) bool {
	return p == base || strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/")
}

// analysedReach says whether the analysis of command, run in dir, may
// write the protected place prot, as the self-protection policy reads
// shell.writes: a target with glob syntax through CouldMatchShell, a plain
// one as a path inside or equal to the place.
func analysedReach(t *testing.T, command, dir, prot string) bool {
	for _, c := range shell.Parse(command).Commands {
		targets, _ := c.Writes()
		for _, tg := range targets {
			abs := tg
			if !strings.HasPrefix(abs, "/") {
				abs = dir + "/" + tg
			}
			abs = filepath.Clean(abs) // as path.normal(path.abs(...)) does
			if strings.ContainsAny(tg, "*?[{(") {
				ok, err := CouldMatchShell(abs, prot)
				if err != nil || ok {
					return true // an invalid pattern is read as a plain path below too
				}
			}
			if within(abs, prot) {
				return true
			}
		}
	}
	return false
}

// bashTally counts what the checks saw, so the test can tell that they
// checked something.
type bashTally struct{ words, literal, reached int }

// checkAgainstBash checks one word in every template.
func checkAgainstBash(t *testing.T, bash, dir string, data []byte, tally *bashTally) {
	word, literal := bashWord(data)
	if word == "" {
		return
	}
	expanded, ok := bashExpand(t, bash, dir, word)
	if !ok {
		return
	}
	tally.words++
	if literal {
		tally.literal++
	}
	for _, tmpl := range bashTemplates {
		command := strings.Replace(tmpl.format, "%s", word, 1)
		for _, rel := range bashProtected {
			prot := dir + "/" + rel
			real := false
			for _, e := range expanded {
				p := e
				if !strings.HasPrefix(p, "/") {
					p = dir + "/" + e
				}
				p = filepath.Clean(p)
				if within(p, prot) || tmpl.tree && within(prot, p) {
					real = true
				}
			}
			if real {
				tally.reached++
			}
			got := analysedReach(t, command, dir, prot)
			if real && !got {
				t.Errorf("%s: bash expands the word to %q, which reaches %s; the analysis says it cannot", command, expanded, rel)
			}
			if literal && got && !real && !strings.HasPrefix(tmpl.format, "frobnicate") {
				t.Errorf("%s: the word cannot be a glob (bash: %q), yet the analysis says it may reach %s", command, expanded, rel)
			}
		}
	}
}

// TestWritesAgainstBash runs a fixed sample of generated words (the fuzz
// test's seeds, and more), so every run of the tests checks them.
func TestWritesAgainstBash(t *testing.T) {
	bash, dir := bashScratch(t)
	r := rand.New(rand.NewPCG(25, 7))
	var tally bashTally
	for range 400 {
		data := make([]byte, 1+r.IntN(5))
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		checkAgainstBash(t, bash, dir, data, &tally)
	}
	// Most words are valid bash; many cannot be globs; many reach a
	// protected place.
	if tally.words < 300 || tally.literal < 50 || tally.reached < 80 {
		t.Errorf("the sample checked too little: %+v", tally)
	}
	t.Logf("%+v", tally)
}

// FuzzWritesAgainstBash is TestWritesAgainstBash on words the fuzzer
// chooses (go test -fuzz FuzzWritesAgainstBash ./stdlib/).
func FuzzWritesAgainstBash(f *testing.F) {
	bash, dir := bashScratch(f)
	for _, seed := range [][]byte{{4}, {2, 11}, {18}, {19}, {33}, {37}, {38}, {9, 24, 9}, {0, 26, 1, 27}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8 {
			return
		}
		checkAgainstBash(t, bash, dir, data, &bashTally{})
	})
}
