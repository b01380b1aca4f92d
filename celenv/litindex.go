package celenv

import (
	"strings"

	"cel.dev/cel-go/interpreter"
)

// A literal index of one long string, shared by the prefilters of the
// rules that test it in one call. Each rule's prefilter searches the
// string for its own literals (prefilter.go), so a call whose long shell
// command a dozen rules test reads it a dozen times or more: the loadgen
// stream's 2.5 KB command took 66 searches, 116k instructions, per call.
// The index reads it once, files every position by the two bytes that
// start there, and answers a search for a literal from the positions of
// its first two bytes.
//
// It answers exactly what strings.Index answers (TestLiteralIndexAgrees,
// FuzzLiteralIndex), and the prefilters' conditions with it are the same
// as without it (TestPrefilterIndexedAgrees, FuzzPrefilterAgreesWithRegexp),
// so no answer depends on whether it was used.

// LiteralIndexHolder is an activation that keeps a LiteralIndex for the
// programs evaluated against it (eval's evaluation, one per call).
type LiteralIndexHolder interface {
	// LiteralIndex returns the holder's index, nil for none.
	LiteralIndex() *LiteralIndex
}

// LiteralIndex is the index of the last long string its holder's
// prefilters tested. The zero value is ready to use.
type LiteralIndex struct {
	s string
	// uses counts the prefilter tests of s: the index is built at the
	// indexAfter-th, as a string one or two rules test is cheaper to
	// search than to index.
	uses  int
	built bool
	// start[b]..start[b+1] are the entries of pos for bucket b: the
	// offsets, increasing, where a pair of bytes of that bucket starts.
	start [litBuckets + 1]int32
	pos   []int32
}

const (
	// litBuckets is the number of buckets pairs of bytes are filed in
	// (a power of two); pairs that share one only cost comparisons.
	litBuckets = 1024
	// minIndexed is the shortest string indexed: a shorter one is read
	// by strings.Index in a few dozen instructions.
	minIndexed = 256
	// indexAfter is the test of a string at which its index is built.
	indexAfter = 3
	// maxKept bounds the string an index is kept for after its call
	// (Kept), as the project's other pooled buffers are bounded (64 KiB):
	// an index holds its string and four bytes of offsets per byte.
	maxKept = 64 << 10
)

// Kept returns x to keep with its holder for a later call, or nil when it
// holds a string, or offsets, past 64 KiB: a pooled holder is reused for
// as long as calls come, and would keep the largest string it ever saw
// (serve takes 8 MiB bodies: 40 MiB per pooled evaluation) for good. A
// later call indexes its own long string afresh either way.
func (x *LiteralIndex) Kept() *LiteralIndex {
	if x == nil || len(x.s) > maxKept || cap(x.pos) > maxKept {
		return nil
	}
	return x
}

// litBucket is the bucket of the pair of bytes a, b.
func litBucket(a, b byte) int { return (int(a)*31 + int(b)) & (litBuckets - 1) }

// indexFor returns the index of s to test s with, or nil when s is to be
// searched directly: it is short, or not yet tested often enough.
func (x *LiteralIndex) indexFor(s string) *LiteralIndex {
	if len(s) < minIndexed || len(s) > 1<<30 {
		return nil
	}
	if x.s != s {
		x.s, x.uses, x.built = s, 0, false
	}
	x.uses++
	if x.uses < indexAfter {
		return nil
	}
	if !x.built {
		x.build()
	}
	return x
}

// build files every offset of s but the last by the pair of bytes that
// starts there.
func (x *LiteralIndex) build() {
	s := x.s
	n := len(s) - 1
	x.start = [litBuckets + 1]int32{}
	for i := range n {
		x.start[litBucket(s[i], s[i+1])+1]++
	}
	for b := 1; b <= litBuckets; b++ {
		x.start[b] += x.start[b-1]
	}
	if cap(x.pos) < n {
		x.pos = make([]int32, n)
	}
	x.pos = x.pos[:n]
	var next [litBuckets]int32
	copy(next[:], x.start[:litBuckets])
	for i := range n {
		b := litBucket(s[i], s[i+1])
		x.pos[next[b]] = int32(i)
		next[b]++
	}
	x.built = true
}

// index returns the offset of the first occurrence of lit in s[from:limit]
// (as an offset of s), -1 when there is none: strings.Index(s[from:limit],
// lit) + from, or -1. s is the indexed string; lit holds two bytes or more.
func (x *LiteralIndex) index(lit string, from, limit int) int {
	b := litBucket(lit[0], lit[1])
	ps := x.pos[x.start[b]:x.start[b+1]]
	lo, hi := 0, len(ps)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(ps[m]) < from {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for _, p32 := range ps[lo:] {
		p := int(p32)
		if p+len(lit) > limit {
			return -1
		}
		if x.s[p:p+len(lit)] == lit {
			return p
		}
	}
	return -1
}

// indexIn returns strings.Index(s[from:limit], lit) + from, or -1, through
// x when x indexes s and lit holds two bytes or more.
func indexIn(x *LiteralIndex, s, lit string, from, limit int) int {
	if x != nil && len(lit) >= 2 {
		return x.index(lit, from, limit)
	}
	j := strings.Index(s[from:limit], lit)
	if j < 0 {
		return -1
	}
	return from + j
}

// literalIndexOf returns the index to test s with in the activation act,
// nil for none.
func literalIndexOf(act interpreter.Activation, s string) *LiteralIndex {
	if len(s) < minIndexed {
		return nil
	}
	h, ok := act.(LiteralIndexHolder)
	if !ok {
		return nil
	}
	x := h.LiteralIndex()
	if x == nil {
		return nil
	}
	return x.indexFor(s)
}
