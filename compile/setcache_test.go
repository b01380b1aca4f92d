package compile

import (
	"bytes"
	"encoding/gob"
	"maps"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// rewriteIndex changes the index of the only record in c, as a cache
// that vouches for whatever it holds would give it.
func rewriteIndex(t *testing.T, c *MemorySetCache, change func(*setIndex)) {
	t.Helper()
	require.Equal(t, 1, c.Len())
	for k, s := range c.m {
		var idx setIndex
		require.NoError(t, gob.NewDecoder(bytes.NewReader(s.index)).Decode(&idx))
		change(&idx)
		var buf bytes.Buffer
		require.NoError(t, gob.NewEncoder(&buf).Encode(&idx))
		c.m[k] = memorySet{buf.Bytes(), s.blobs}
	}
}

// A record that does not fit the sources or the compiler's invariants is
// not replayed, even when its cache vouches for it: the compile is a full
// one, and decides alike.
func TestSetCacheInconsistentRecords(t *testing.T) {
	srcs := someBuiltins(t)
	full, err := Compile(srcs)
	require.NoError(t, err)
	recorded := &MemorySetCache{}
	_, err = Compile(srcs, WithSetCache(recorded))
	require.NoError(t, err)
	firstWith := func(idx *setIndex, pred func(sp setProgram) bool) *setProgram {
		for i := range idx.Programs {
			if pred(idx.Programs[i]) {
				return &idx.Programs[i]
			}
		}
		t.Fatal("no such program")
		return nil
	}
	proven := func(sp setProgram) bool { return sp.Needs && sp.FastUpTo > 0 }
	cases := map[string]func(*setIndex){
		"another version": func(idx *setIndex) { idx.Version = "celguard-set-0" },
		"another key":     func(idx *setIndex) { idx.Key = "set:other" },
		"an error among warnings": func(idx *setIndex) {
			idx.Warnings = append(idx.Warnings, policy.Diagnostic{Severity: policy.SeverityError})
		},
		"one program less":       func(idx *setIndex) { idx.Programs = idx.Programs[:len(idx.Programs)-1] },
		"one program more":       func(idx *setIndex) { idx.Programs = append(idx.Programs, idx.Programs[0]) },
		"two programs swapped":   func(idx *setIndex) { idx.Programs[0], idx.Programs[1] = idx.Programs[1], idx.Programs[0] },
		"another text":           func(idx *setIndex) { idx.Programs[3].Text += " " },
		"another place":          func(idx *setIndex) { idx.Programs[3].Pos.Line++ },
		"a proof at an odd size": func(idx *setIndex) { firstWith(idx, proven).FastUpTo = 100 },
		"a bound over the limit": func(idx *setIndex) { firstWith(idx, proven).Bound = math.MaxUint64 },
		"a variable as a rule":   func(idx *setIndex) { firstWith(idx, func(sp setProgram) bool { return sp.Variable }).Variable = false },
		"a variable's type broken": func(idx *setIndex) {
			firstWith(idx, func(sp setProgram) bool { return sp.Variable }).Type = []byte{0xff}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := &MemorySetCache{m: maps.Clone(recorded.m)}
			again, err := Compile(srcs, WithSetCache(c))
			require.NoError(t, err)
			require.True(t, again.FromCache())
			rewriteIndex(t, c, change)
			set, err := Compile(srcs, WithSetCache(c))
			require.NoError(t, err)
			assert.False(t, set.FromCache())
			assert.Equal(t, full.Warnings(), set.Warnings())
		})
	}

	// Dropping an expression's cost accounting is found when its program
	// is made: it is the full compile's, accounting kept.
	c := &MemorySetCache{m: maps.Clone(recorded.m)}
	fullProgs := programsByPos(full)
	var at policy.Pos
	rewriteIndex(t, c, func(idx *setIndex) {
		p := firstWith(idx, func(sp setProgram) bool { return proven(sp) && fullProgs[sp.Pos] != nil })
		at = p.Pos
		p.Needs, p.FastUpTo, p.Bound = false, math.MaxUint64, 0
	})
	set, err := Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	n, _ := programsByPos(set)[at].FastUpTo()
	wantN, _ := fullProgs[at].FastUpTo()
	assert.Equal(t, wantN, n)
	assert.NotEqual(t, uint64(math.MaxUint64), n)
}

// someBuiltins are a few built-in policies: tool classes, one with
// counters, one with patterns kept in variables.
func someBuiltins(t *testing.T) []policy.Source {
	t.Helper()
	all, err := policies.Sources()
	require.NoError(t, err)
	var out []policy.Source
	for _, s := range all {
		switch s.Name {
		case "builtin/tool-classes.yaml", "builtin/rate-limit.yaml", "builtin/secret-redaction.yaml", "builtin/dangerous-commands.yaml":
			out = append(out, s)
		}
	}
	require.Len(t, out, 4)
	return out
}

// programsByPos are a set's variables' and conditions' programs, by the
// place of their expression.
func programsByPos(set *PolicySet) map[policy.Pos]*Program {
	out := map[policy.Pos]*Program{}
	for _, p := range set.Policies() {
		for _, v := range p.Variables {
			out[v.Expr.Pos] = v.Program
		}
	}
	for _, r := range set.Rules() {
		if r.Condition != nil {
			out[r.Source.Condition.Pos] = r.Condition
		}
	}
	return out
}

// A replayed set's programs are made at first use by whichever decision
// needs them first: concurrent decisions (the daemon's) make each once and
// see it whole (run with -race).
func TestSetCacheConcurrentFirstUse(t *testing.T) {
	srcs := someBuiltins(t)
	c := &MemorySetCache{}
	_, err := Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	set, err := Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	progs := programsByPos(set)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, p := range progs {
				assert.NotNil(t, p.For(16))
				assert.NotNil(t, p.AST())
			}
		})
	}
	wg.Wait()
}
