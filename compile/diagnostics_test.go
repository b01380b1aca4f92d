package compile_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

var update = flag.Bool("update", false, "rewrite the want.diag sections of testdata/diagnostics/*.txtar")

// wantSection is the archive section holding the rendered diagnostics.
const wantSection = "want.diag"

// headerRe matches the first line of a rendered diagnostic.
var headerRe = regexp.MustCompile(`^(\S+?):(\d+):(\d+): (error|warning|info): ([a-z_]+): (.+)$`)

// expectRe matches a hand-written expectation in an archive's comment:
//
//	expect: CODE FILE:LINE:COL
//
// Each one must be among the diagnostics; they pin the carets checked by hand
// so that an -update cannot silently move them.
var expectRe = regexp.MustCompile(`^expect: ([a-z_]+) (\S+):(\d+):(\d+)$`)

// fixture is one parsed testdata/diagnostics archive.
type fixture struct {
	path    string
	archive *txtar.Archive
	srcs    []policy.Source
	want    string
	hasWant bool
	expects []rendered
}

// rendered is one diagnostic as read back from WriteText's output.
type rendered struct {
	code policy.Code
	pos  policy.Pos
	// src and caret are the two lines that follow the header, when present.
	src, caret string
}

func (r rendered) String() string { return fmt.Sprintf("%s %s", r.code, r.pos) }

func loadFixtures(t *testing.T) []*fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "diagnostics", "*.txtar"))
	require.NoError(t, err)
	var out []*fixture
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		require.NoError(t, err, "parse %s", p)
		f := &fixture{path: p, archive: ar}
		for _, file := range ar.Files {
			if file.Name == wantSection {
				f.want, f.hasWant = string(file.Data), true
				continue
			}
			f.srcs = append(f.srcs, policy.Source{Name: file.Name, Data: file.Data})
		}
		for _, line := range strings.Split(string(ar.Comment), "\n") {
			m := expectRe.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			l, _ := strconv.Atoi(m[3])
			c, _ := strconv.Atoi(m[4])
			f.expects = append(f.expects, rendered{code: policy.Code(m[1]), pos: policy.Pos{File: m[2], Line: l, Col: c}})
		}
		out = append(out, f)
	}
	return out
}

// render compiles the fixture's policy files and renders the diagnostics as
// `celguard lint` prints them.
func (f *fixture) render(t *testing.T) (string, policy.Diagnostics) {
	t.Helper()
	_, ds, err := compile.Check(f.srcs)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, policy.WriteText(&b, ds, policy.LinesOf(f.srcs)))
	return b.String(), ds
}

// parseRendered reads WriteText output back into its diagnostics.
func parseRendered(t *testing.T, text string) []rendered {
	t.Helper()
	var out []rendered
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		m := headerRe.FindStringSubmatch(lines[i])
		if m == nil {
			t.Errorf("line %d of the rendered diagnostics is not a header: %q", i+1, lines[i])
			continue
		}
		l, _ := strconv.Atoi(m[2])
		c, _ := strconv.Atoi(m[3])
		r := rendered{code: policy.Code(m[5]), pos: policy.Pos{File: m[1], Line: l, Col: c}}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") {
			i++
			r.src = strings.TrimPrefix(lines[i], "    ")
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") && strings.TrimSpace(lines[i+1]) == "^" {
				i++
				r.caret = strings.TrimPrefix(lines[i], "    ")
			}
		}
		out = append(out, r)
	}
	return out
}

// knownCodes are the error codes policy/diag.go defines. (Warnings of the
// linter may use other codes.)
var knownCodes = []policy.Code{
	policy.CodeYAMLSyntax, policy.CodeUnknownField, policy.CodeWrongType, policy.CodeMissingField,
	policy.CodeInvalidValue, policy.CodeInvalidVerdict, policy.CodeInvalidPhase, policy.CodeInvalidDuration,
	policy.CodeInvalidGlob, policy.CodeInvalidID, policy.CodeDuplicateRuleID, policy.CodeDuplicatePolicy,
	policy.CodeDuplicateName, policy.CodeReservedName, policy.CodeVerdictPhase, policy.CodeModifyMismatch,
	policy.CodeModifyPhase, policy.CodeCELSyntax, policy.CodeCELType, policy.CodeWrongResultType,
	policy.CodeResultInBefore, policy.CodeUndeclaredCounter, policy.CodeConflictingDefault,
	policy.CodeNoPolicies, policy.CodeTooManyRules, policy.CodeCounterInCounter,
	policy.CodeInvalidLiteral, policy.CodeNoToolClasses, policy.CodeVariablePhase, policy.CodeInvalidMask, policy.CodeMonitorMandatory,
}

// fixtureCodes are the codes a policy file can trigger through Check; the
// fixtures together must cover every one. (no_policies and too_many_rules
// come from the caller, not from a file; see compile_test.go.)
var fixtureCodes = []policy.Code{
	policy.CodeYAMLSyntax, policy.CodeUnknownField, policy.CodeWrongType, policy.CodeMissingField,
	policy.CodeInvalidValue, policy.CodeInvalidVerdict, policy.CodeInvalidPhase, policy.CodeInvalidDuration,
	policy.CodeInvalidGlob, policy.CodeInvalidID, policy.CodeDuplicateRuleID, policy.CodeDuplicatePolicy,
	policy.CodeDuplicateName, policy.CodeReservedName, policy.CodeVerdictPhase, policy.CodeModifyMismatch,
	policy.CodeModifyPhase, policy.CodeCELSyntax, policy.CodeCELType, policy.CodeWrongResultType,
	policy.CodeResultInBefore, policy.CodeUndeclaredCounter, policy.CodeConflictingDefault,
	policy.CodeCounterInCounter, policy.CodeInvalidLiteral, policy.CodeNoToolClasses,
}

func TestDiagnostics(t *testing.T) {
	fixtures := loadFixtures(t)
	require.GreaterOrEqual(t, len(fixtures), 30, "got %d diagnostic fixtures, want at least 30", len(fixtures))
	for _, f := range fixtures {
		name := strings.TrimSuffix(filepath.Base(f.path), ".txtar")
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, f.srcs, "the archive has no policy file")
			got, ds := f.render(t)

			if *update {
				writeWant(t, f, got)
			} else {
				require.True(t, f.hasWant, "the archive has no %s section; run go test -update", wantSection)
				assert.Equal(t, f.want, got, "rendered diagnostics: got the first, want the %s section", wantSection)
			}

			// Structural checks on the golden text: every diagnostic has a
			// known code and a position inside its file, with the source line
			// and a caret under the column.
			rs := parseRendered(t, f.want)
			require.NotEmpty(t, rs, "got no diagnostic, want at least one")
			require.True(t, ds.HasErrors(), "got no error-severity diagnostic in %v, want at least one", ds)
			for i, r := range rs {
				if i < len(ds) && ds[i].Severity == policy.SeverityError {
					assert.Contains(t, knownCodes, r.code, "got error code %q, want one of policy/diag.go", r.code)
				}
				src, ok := policy.LinesOf(f.srcs)(r.pos.File, r.pos.Line)
				if !assert.True(t, ok, "%s: got a position outside the archive's files", r) {
					continue
				}
				assert.Equal(t, strings.ReplaceAll(src, "\t", " "), r.src, "%s: got source line %q, want %q", r, r.src, src)
				if assert.Positive(t, r.pos.Col, "%s: got column 0, want a known column", r) {
					assert.LessOrEqual(t, r.pos.Col, utf8.RuneCountInString(src)+1, "%s: got a column past the end of %q", r, src)
					assert.Equal(t, strings.Repeat(" ", r.pos.Col-1)+"^", r.caret, "%s: got caret line %q", r, r.caret)
				}
			}
			// The golden text and the diagnostics agree one to one.
			require.Len(t, rs, len(ds), "got %d rendered diagnostics for %d diagnostics", len(rs), len(ds))
			for i, d := range ds {
				assert.Equal(t, d.Code, rs[i].code)
				assert.Equal(t, d.Pos, rs[i].pos)
				for _, rel := range d.Related {
					_, ok := policy.LinesOf(f.srcs)(rel.File, rel.Line)
					assert.True(t, ok, "%s: related position %s is outside the archive's files", rs[i], rel)
				}
			}
			// The hand-checked positions in the archive comment.
			for _, e := range f.expects {
				assert.Contains(t, rs, rendered{code: e.code, pos: e.pos, src: lineOf(f.srcs, e.pos), caret: caretFor(e.pos)},
					"got %v, want %s among them", rs, e)
			}
		})
	}
}

// TestDiagnosticsCoverage checks that the fixtures together trigger every code
// a policy file can, and that each fixture pins at least one position by hand.
func TestDiagnosticsCoverage(t *testing.T) {
	seen := map[policy.Code]bool{}
	for _, f := range loadFixtures(t) {
		assert.NotEmpty(t, f.expects, "%s: got no `expect:` line in the archive comment, want at least one", f.path)
		for _, r := range parseRendered(t, f.want) {
			seen[r.code] = true
		}
	}
	for _, c := range fixtureCodes {
		assert.True(t, seen[c], "code %s: got no fixture triggering it, want at least one", c)
	}
}

func lineOf(srcs []policy.Source, p policy.Pos) string {
	s, _ := policy.LinesOf(srcs)(p.File, p.Line)
	return strings.ReplaceAll(s, "\t", " ")
}

func caretFor(p policy.Pos) string {
	if p.Col < 1 {
		return ""
	}
	return strings.Repeat(" ", p.Col-1) + "^"
}

func writeWant(t *testing.T, f *fixture, got string) {
	t.Helper()
	ar := f.archive
	i := slices.IndexFunc(ar.Files, func(file txtar.File) bool { return file.Name == wantSection })
	if i < 0 {
		ar.Files = append(ar.Files, txtar.File{Name: wantSection})
		i = len(ar.Files) - 1
	}
	ar.Files[i].Data = []byte(got)
	require.NoError(t, os.WriteFile(f.path, txtar.Format(ar), 0o644))
	f.want = got
}
