package compile

import (
	"bytes"
	"encoding/gob"
	"maps"
	"math"
	"sync"
	"testing"

	"cel.dev/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

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
	full, recorded := compiledAndRecorded(t, srcs)
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

// compiledAndRecorded compiles srcs in full twice: once with no cache, and
// once recording into a fresh MemorySetCache, which it returns.
func compiledAndRecorded(t *testing.T, srcs []policy.Source) (*PolicySet, *MemorySetCache) {
	t.Helper()
	full, err := Compile(srcs)
	require.NoError(t, err)
	recorded := &MemorySetCache{}
	_, err = Compile(srcs, WithSetCache(recorded))
	require.NoError(t, err)
	return full, recorded
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

// checkedProto is ast as cel-go's CheckedExpr, to compare two ASTs.
func checkedProto(t *testing.T, ast *cel.Ast) *exprpb.CheckedExpr {
	t.Helper()
	pb, err := cel.AstToCheckedExpr(ast)
	require.NoError(t, err)
	return pb
}

// sameASTs asserts every program of got has the checked and planned
// expressions of want's at the same place.
func sameASTs(t *testing.T, want, got *PolicySet) {
	t.Helper()
	wantProgs, gotProgs := programsByPos(want), programsByPos(got)
	require.Equal(t, len(wantProgs), len(gotProgs))
	for pos, w := range wantProgs {
		g := gotProgs[pos]
		require.NotNil(t, g, "%v", pos)
		wm, gm := w.made(), g.made()
		assert.True(t, proto.Equal(checkedProto(t, wm.ast), checkedProto(t, gm.ast)), "checked %v", pos)
		assert.True(t, proto.Equal(checkedProto(t, wm.planned), checkedProto(t, gm.planned)), "planned %v", pos)
	}
}

// A replayed program's expressions, rebuilt from a blob without type map
// and the index's tables of types and references, are the ones a full
// compile checks, for every built-in policy.
func TestSetCacheReplaysTheSameASTs(t *testing.T) {
	srcs, err := policies.Sources()
	require.NoError(t, err)
	full, c := compiledAndRecorded(t, srcs)
	set, err := Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	sameASTs(t, full, set)

	var idx setIndex
	for _, s := range c.m {
		require.NoError(t, gob.NewDecoder(bytes.NewReader(s.index)).Decode(&idx))
	}
	assert.Less(t, len(idx.Types), 100, "types are kept once")
	assert.NotEmpty(t, idx.Refs)
}

// A type or reference table that does not fit a program's blob makes that
// program the full compile's, found when it is first made.
func TestSetCacheBrokenTypeTables(t *testing.T) {
	srcs := someBuiltins(t)
	full, recorded := compiledAndRecorded(t, srcs)
	withTypes := func(idx *setIndex) *setProgram {
		for i := range idx.Programs {
			if len(idx.Programs[i].CheckedTypes.IDs) > 0 && len(idx.Programs[i].CheckedTypes.RefIDs) > 0 {
				return &idx.Programs[i]
			}
		}
		t.Fatal("no program with types and references")
		return nil
	}
	cases := map[string]func(*setIndex){
		"a type index out of range": func(idx *setIndex) { withTypes(idx).CheckedTypes.Of[0] = uint32(len(idx.Types)) },
		"a type that does not decode": func(idx *setIndex) {
			idx.Types[withTypes(idx).CheckedTypes.Of[0]] = []byte{0xff}
		},
		"a reference index out of range": func(idx *setIndex) {
			withTypes(idx).CheckedTypes.RefOf[0] = uint32(len(idx.Refs))
		},
		"types without ids": func(idx *setIndex) {
			p := withTypes(idx)
			p.CheckedTypes.Of = p.CheckedTypes.Of[1:]
		},
		"references without ids": func(idx *setIndex) {
			p := withTypes(idx)
			p.CheckedTypes.RefOf = p.CheckedTypes.RefOf[1:]
		},
		"no types": func(idx *setIndex) {
			p := withTypes(idx)
			p.CheckedTypes.IDs, p.CheckedTypes.Of = nil, nil
		},
		"a reference given twice": func(idx *setIndex) {
			p := withTypes(idx)
			p.CheckedTypes.RefIDs = append(p.CheckedTypes.RefIDs, p.CheckedTypes.RefIDs[0])
			p.CheckedTypes.RefOf = append(p.CheckedTypes.RefOf, p.CheckedTypes.RefOf[0])
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := &MemorySetCache{m: maps.Clone(recorded.m)}
			rewriteIndex(t, c, change)
			set, err := Compile(srcs, WithSetCache(c))
			require.NoError(t, err)
			require.True(t, set.FromCache())
			sameASTs(t, full, set)
		})
	}
}
