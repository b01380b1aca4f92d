package shell

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// parseWork is the work Parse does on in, measured as the bytes it
// allocates: deterministic on a loaded machine, unlike wall-clock time, and
// a quadratic walk shows in it as surely as in time.
func parseWork(in string) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Parse(in)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// assertLinear fails when parsing gen(2n) does more than three times the
// work of parsing gen(n) (give or take linearSlack): linear work doubles,
// quadratic work quadruples.
func assertLinear(t *testing.T, what string, gen func(n int) string, n int) {
	t.Helper()
	checkLinear(t, what, func(n int) uint64 { return parseWork(gen(n)) }, n)
}

// linearSlack absorbs what the runtime allocates beside the work measured
// (other goroutines, the race detector): a few KiB, where a quadratic walk
// over these inputs allocates megabytes.
const linearSlack = 64 << 10

func checkLinear(t testing.TB, what string, work func(n int) uint64, n int) {
	t.Helper()
	small, large := work(n), work(2*n)
	if small == 0 {
		t.Fatalf("%s: no work measured for n=%d", what, n)
	}
	if large > 3*small+linearSlack {
		t.Errorf("%s: 2n=%d does %.1fx the work of n=%d (%d against %d bytes allocated); it must grow linearly",
			what, 2*n, float64(large)/float64(small), n, large, small)
	}
}

// TestCheckLinearCatchesQuadratic makes sure the check above can fail: work
// that grows with the square of n is reported, and linear work is not.
func TestCheckLinearCatchesQuadratic(t *testing.T) {
	var sink []byte
	alloc := func(size int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sink = make([]byte, size)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	rec := &recorder{}
	checkLinear(rec, "quadratic", func(n int) uint64 { return alloc(n * n) }, 1000)
	if !rec.failed {
		t.Error("quadratic work passed the linearity check")
	}
	rec = &recorder{}
	checkLinear(rec, "linear", func(n int) uint64 { return alloc(1000 * n) }, 1000)
	if rec.failed {
		t.Error("linear work failed the linearity check")
	}
	_ = sink
}

// recorder is a testing.TB that records a failure instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

// writesWork is the work Writes does on the (already parsed) commands of in,
// in bytes allocated.
func writesWork(in string) uint64 {
	cmds := Parse(in).Commands
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, c := range cmds {
		c.Writes()
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestWritesLinear: the write targets of a command that puts one long
// directory in front of many names (cp's sources, find's roots and names,
// go's packages and profiles) grow linearly with the command; past
// maxJoined bytes the names are summed up as DIR/**. Writing every DIR/NAME
// took the square of the command: 200 MB for a 40 KB cp (issue 15).
func TestWritesLinear(t *testing.T) {
	long := func(n int) string { return "/srv/" + strings.Repeat("d", n) }
	cases := []struct {
		what   string
		gen    func(n int) string
		spread string // a target the wide form must have, %s the long directory
	}{
		{"cp sources into a long directory", func(n int) string { return "cp " + strings.Repeat("a ", n) + long(n) }, "%s/**"},
		{"mv sources into a long directory", func(n int) string { return "mv -t " + long(n) + " " + strings.Repeat("a ", n) }, "%s/**"},
		{"find roots and names", func(n int) string {
			return "find " + strings.Repeat("r ", n) + strings.Repeat("-name x ", n) + "-delete"
		}, "r/**"},
		{"go build -o a long directory", func(n int) string { return "go build -o " + long(n) + "/ " + strings.Repeat("./p ", n) }, "%s/**"},
		{"go install into a long GOBIN", func(n int) string { return "GOBIN=" + long(n) + " go install " + strings.Repeat("./p ", n) }, "%s/**"},
		{"go test -outputdir with many profiles", func(n int) string {
			return "go test -outputdir " + long(n) + " " + strings.Repeat("-cpuprofile=c ", n)
		}, "%s/**"},
	}
	for _, tc := range cases {
		checkLinear(t, tc.what, func(n int) uint64 { return writesWork(tc.gen(n)) }, 2000)
		w, _ := Parse(tc.gen(2000)).Commands[0].Writes()
		if want := strings.ReplaceAll(tc.spread, "%s", long(2000)); !slices.Contains(w, want) {
			t.Errorf("%s: writes lack %.40q", tc.what, want)
		}
	}
}
