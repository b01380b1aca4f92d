package compile

import (
	"bytes"
	"encoding/gob"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/ext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

	"github.com/celguard/celguard/celenv"
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
		in := bytes.NewReader(s.index)
		require.NoError(t, gob.NewDecoder(in).Decode(&idx))
		idx.exprs = bytes.Clone(s.index[len(s.index)-in.Len():])
		change(&idx)
		var buf bytes.Buffer
		require.NoError(t, gob.NewEncoder(&buf).Encode(&idx))
		buf.Write(idx.exprs)
		c.m[k] = memorySet{buf.Bytes()}
	}
}

// indexExprs is every program's checked and planned expression in idx,
// decoded.
func indexExprs(t testing.TB, idx *setIndex) (checked, planned []*setAST) {
	t.Helper()
	r := &replayState{idx: *idx}
	for _, sp := range idx.Programs {
		a, err := r.decodeExpr(sp.Checked)
		require.NoError(t, err)
		var p *setAST
		if sp.Planned.Len != 0 {
			p, err = r.decodeExpr(sp.Planned)
			require.NoError(t, err)
		}
		checked, planned = append(checked, a), append(planned, p)
	}
	return checked, planned
}

// setIndexExprs writes checked and planned as idx's expressions, in a
// new stream.
func setIndexExprs(t testing.TB, idx *setIndex, checked, planned []*setAST) {
	t.Helper()
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	require.NoError(t, enc.Encode(&setAST{}))
	idx.ExprTypes = uint32(buf.Len())
	put := func(a *setAST) setExpr {
		off := buf.Len()
		require.NoError(t, enc.Encode(a))
		return setExpr{uint32(off), uint32(buf.Len() - off)}
	}
	for i := range idx.Programs {
		idx.Programs[i].Checked = put(checked[i])
		idx.Programs[i].Planned = setExpr{}
		if planned[i] != nil {
			idx.Programs[i].Planned = put(planned[i])
		}
	}
	idx.exprs = buf.Bytes()
}

// rewriteExprs is rewriteIndex with the programs' checked expressions
// decoded for change, and written back.
func rewriteExprs(t *testing.T, c *MemorySetCache, change func(*setIndex, []*setAST)) {
	t.Helper()
	rewriteIndex(t, c, func(idx *setIndex) {
		checked, planned := indexExprs(t, idx)
		change(idx, checked)
		setIndexExprs(t, idx, checked, planned)
	})
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
		"a variable's type past the table": func(idx *setIndex) {
			firstWith(idx, func(sp setProgram) bool { return sp.Variable }).TypeOf = uint32(len(idx.Types))
		},
		"a variable's type broken": func(idx *setIndex) {
			idx.Types[firstWith(idx, func(sp setProgram) bool { return sp.Variable }).TypeOf] = setType{Op: 0xff}
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
func compiledAndRecorded(t testing.TB, srcs []policy.Source) (*PolicySet, *MemorySetCache) {
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
				assert.NotNil(t, p.Tracked())
			}
		})
	}
	wg.Wait()
}

// A replayed program that needs cost accounting and is proven within the
// limit for small inputs plans the program with accounting only when a
// call needs it: a small call evaluates the one without. Both answer as
// the full compile's, and the one with accounting stops at the same cost.
func TestSetCacheTrackedAtFirstUse(t *testing.T) {
	env, err := celenv.New(celenv.WithCostLimit(5000))
	require.NoError(t, err)
	srcs := []policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  - id: many
    condition: args.xs.exists(x, string(x).matches("^a+b$"))
    verdict: block
    reason: many
`)}}
	full, err := Compile(srcs, WithEnv(env))
	require.NoError(t, err)
	c := &MemorySetCache{}
	_, err = Compile(srcs, WithEnv(env), WithSetCache(c))
	require.NoError(t, err)
	set, err := Compile(srcs, WithEnv(env), WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	p, fp := set.Rules()[0].Condition, full.Rules()[0].Condition
	n, _ := p.FastUpTo()
	require.Positive(t, n)
	require.NotNil(t, p.trackedLazy)

	act := func(xs []any) map[string]any { return map[string]any{"args": map[string]any{"xs": xs}} }
	small := act([]any{"ab", "x"})
	v, _, err := p.For(2).Eval(small)
	require.NoError(t, err)
	assert.Equal(t, true, v.Value())
	assert.Nil(t, p.trackedLazy.prg, "a small call plans no program with accounting")

	v, _, err = p.Tracked().Eval(small)
	require.NoError(t, err)
	assert.Equal(t, true, v.Value())
	assert.NotSame(t, p.For(2), p.Tracked())

	// Past the limit, both programs with accounting stop the same way.
	big := make([]any, 2000)
	for i := range big {
		big[i] = strings.Repeat("a", 100)
	}
	_, _, wantErr := fp.Tracked().Eval(act(big))
	_, _, gotErr := p.Tracked().Eval(act(big))
	require.Error(t, wantErr)
	assert.Equal(t, wantErr.Error(), gotErr.Error())
}

// sameAST asserts that got is want: the same tree, source information
// (every node's offset range, start and stop, its macro calls, lines,
// description, syntax and extensions), types and references.
func sameAST(t *testing.T, want, got *cel.Ast, msg ...any) {
	t.Helper()
	w, g := want.NativeRep(), got.NativeRep()
	exprProto := func(e celast.Expr) *exprpb.Expr {
		pb, err := celast.ExprToProto(e)
		require.NoError(t, err)
		return pb
	}
	assert.True(t, proto.Equal(exprProto(w.Expr()), exprProto(g.Expr())), msg...)
	wi, gi := w.SourceInfo(), g.SourceInfo()
	assert.Equal(t, wi.OffsetRanges(), gi.OffsetRanges(), msg...)
	assert.Equal(t, wi.LineOffsets(), gi.LineOffsets(), msg...)
	assert.Equal(t, wi.Description(), gi.Description(), msg...)
	assert.Equal(t, wi.SyntaxVersion(), gi.SyntaxVersion(), msg...)
	assert.Equal(t, wi.Extensions(), gi.Extensions(), msg...)
	require.Equal(t, len(wi.MacroCalls()), len(gi.MacroCalls()), msg...)
	for id, m := range wi.MacroCalls() {
		gm, ok := gi.GetMacroCall(id)
		require.True(t, ok, msg...)
		assert.True(t, proto.Equal(exprProto(m), exprProto(gm)), msg...)
	}
	require.Equal(t, len(w.TypeMap()), len(g.TypeMap()), msg...)
	for id, typ := range w.TypeMap() {
		gt, ok := g.TypeMap()[id]
		require.True(t, ok, msg...)
		assert.True(t, typ.IsExactType(gt), "%v: %v is %v", msg, gt, typ)
	}
	assert.Equal(t, w.ReferenceMap(), g.ReferenceMap(), msg...)
	assert.True(t, got.IsChecked())
}

// samePlan asserts got is want's tree, types, references and source
// extensions: what a plan reads (planAST).
func samePlan(t *testing.T, want, got *celast.AST, msg ...any) {
	t.Helper()
	require.NotNil(t, got, msg...)
	wpb, err := celast.ExprToProto(want.Expr())
	require.NoError(t, err)
	gpb, err := celast.ExprToProto(got.Expr())
	require.NoError(t, err)
	assert.True(t, proto.Equal(wpb, gpb), msg...)
	assert.Equal(t, want.SourceInfo().Extensions(), got.SourceInfo().Extensions(), msg...)
	require.Equal(t, len(want.TypeMap()), len(got.TypeMap()), msg...)
	for id, typ := range want.TypeMap() {
		gt, ok := got.TypeMap()[id]
		require.True(t, ok, msg...)
		assert.True(t, typ.IsExactType(gt), "%v: %v is %v", msg, gt, typ)
	}
	assert.Equal(t, want.ReferenceMap(), got.ReferenceMap(), msg...)
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
		// What the programs were planned from, before any AST is built.
		samePlan(t, wm.plan, gm.plan, "plan %v", pos)
		wm.AST()
		require.NotNil(t, gm.AST(), "%v", pos)
		sameAST(t, wm.ast, gm.ast, "checked %v", pos)
		sameAST(t, wm.planned, gm.planned, "planned %v", pos)
		assert.Equal(t, wm.ast == wm.planned, gm.ast == gm.planned, "%v", pos)
	}
}

// unreplayable is the number of programs of a replayed set whose record
// does not replay (fill), all of them, not only those programsByPos finds.
func unreplayable(t *testing.T, set *PolicySet) int {
	t.Helper()
	var r *replayState
	for _, g := range programsByPos(set) {
		require.NotNil(t, g.src)
		r = g.src.r
	}
	require.NotNil(t, r)
	n := 0
	for i := range r.idx.Programs {
		sp := &r.idx.Programs[i]
		_, err := r.exprAST(sp.Checked)
		if err == nil && sp.Planned.Len != 0 {
			_, err = r.exprAST(sp.Planned)
		}
		if err != nil || (&programSource{r: r, i: i}).fill(&Program{}) != nil {
			n++
		}
	}
	return n
}

// A replayed program's expressions, rebuilt from the record's columns and
// its tables of strings, types and references, are the ones a full
// compile checks, for every built-in policy and every conformance suite's
// (conformance.TestConformanceReplayed runs those).
func TestSetCacheReplaysTheSameASTs(t *testing.T) {
	srcs, err := policies.Sources()
	require.NoError(t, err)
	full, c := compiledAndRecorded(t, srcs)
	set, err := Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	sameASTs(t, full, set)
	// Each of them from its record: a program whose record does not
	// replay is the full compile's, which sameASTs cannot tell apart.
	assert.Zero(t, unreplayable(t, set), "every program replays from its record")
	for pos, g := range programsByPos(set) {
		assert.Empty(t, g.src.r.full.progs, "%v: no program fell back to a full compile", pos)
	}

	var idx setIndex
	for _, s := range c.m {
		require.NoError(t, gob.NewDecoder(bytes.NewReader(s.index)).Decode(&idx))
	}
	assert.Less(t, len(idx.Types), 100, "types are kept once")
	assert.NotEmpty(t, idx.Refs)
}

// everyKind are expressions with every kind of node the record holds:
// maps, messages, optional entries and fields, optional list elements,
// every kind of literal, presence tests, two-variable comprehensions,
// macro calls kept in the source information.
var everyKind = []string{
	`{"a": 1, ?"b": m.?c, 2: [1u, 2.5, b"\x00\xff", null, true, false, -3]}`,
	`[1, ?m.?x, 3].size() > 0 && has(m.a) && m.all(k, v, k != "" || v == null)`,
	`google.api.expr.v1alpha1.Expr{id: 1, ?call_expr: optional.none()}.id == 1`,
	`m.exists(k, k.startsWith("x")) ? x : "\u00e9t\u00e9"`,
	`[1, 2].transformList(i, v, v * i)`,
	`google.api.expr.v1alpha1.Type.PrimitiveType.BOOL == 1`, // a reference to a value
}

// recordTexts compiles texts and records them in one index.
func recordTexts(t testing.TB, texts []string) (setIndex, []setAST, []*cel.Ast) {
	t.Helper()
	env, err := cel.NewEnv(cel.OptionalTypes(), cel.Variable("m", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("x", cel.DynType), cel.EnableMacroCallTracking(), cel.Types(&exprpb.Expr{}, &exprpb.Type{}), ext.TwoVarComprehensions())
	require.NoError(t, err)
	strs := &setStrings{}
	var idx setIndex
	typs := &setTypes{}
	typeN := func(typ *cel.Type) (uint32, error) {
		n, err := typs.add(typ)
		idx.Types = typs.list
		return n, err
	}
	refN := func(r *celast.ReferenceInfo) uint32 {
		idx.Refs = append(idx.Refs, setRef{r.Name, r.OverloadIDs})
		return uint32(len(idx.Refs) - 1)
	}
	var recs []setAST
	var asts []*cel.Ast
	for _, text := range texts {
		a, iss := env.Compile(text)
		require.NoError(t, iss.Err(), text)
		rec, err := recordAST(a, strs, typeN, refN)
		require.NoError(t, err, text)
		recs, asts = append(recs, rec), append(asts, a)
	}
	idx.Strings = strs.list
	return idx, recs, asts
}

// Every kind of node the record holds comes back as it was, in the full
// AST and in the lean one a plan reads.
func TestSetASTEveryKind(t *testing.T) {
	idx, recs, asts := recordTexts(t, everyKind)
	assert.NotEmpty(t, recs[len(recs)-1].ValueRefs, "an enum constant is a reference to a value")
	for i := range recs {
		back, err := (&replayState{idx: idx}).replayAST(&recs[i])
		require.NoError(t, err, everyKind[i])
		sameAST(t, asts[i], back, everyKind[i])
		plan, err := (&replayState{idx: idx}).planAST(&recs[i])
		require.NoError(t, err, everyKind[i])
		samePlan(t, asts[i].NativeRep(), plan, everyKind[i])
	}
}

// A type or reference table that does not fit a program's expression
// makes that program the full compile's, found when it is first made.
func TestSetCacheBrokenTypeTables(t *testing.T) {
	srcs := someBuiltins(t)
	full, recorded := compiledAndRecorded(t, srcs)
	withTypes := func(checked []*setAST) *setAST {
		for _, a := range checked {
			if len(a.TypeOf) > 1 && len(a.RefIDs) > 0 {
				return a
			}
		}
		t.Fatal("no program with types and references")
		return nil
	}
	cases := map[string]func(*setIndex, []*setAST){
		"a type index out of range": func(idx *setIndex, checked []*setAST) { withTypes(checked).TypeOf[0] = uint32(len(idx.Types)) },
		"a type that does not decode": func(idx *setIndex, checked []*setAST) {
			// One no variable has: a variable's type is read when the set
			// is replayed (TestSetCacheInconsistentRecords).
			for _, a := range checked {
				for _, n := range a.TypeOf {
					if !slices.ContainsFunc(idx.Programs, func(sp setProgram) bool { return sp.Variable && sp.TypeOf == n }) {
						idx.Types[n] = setType{Op: 0xff}
						return
					}
				}
			}
			t.Error("every type of the expressions is a variable's")
		},
		"a reference index out of range": func(idx *setIndex, checked []*setAST) {
			withTypes(checked).RefOf[0] = uint32(len(idx.Refs))
		},
		"types missing": func(idx *setIndex, checked []*setAST) {
			a := withTypes(checked)
			a.TypeOf = a.TypeOf[1:]
		},
		"a type too many": func(idx *setIndex, checked []*setAST) {
			a := withTypes(checked)
			a.TypeOf = append(a.TypeOf, 0)
		},
		"references without ids": func(idx *setIndex, checked []*setAST) {
			a := withTypes(checked)
			a.RefOf = a.RefOf[1:]
		},
		"no types": func(idx *setIndex, checked []*setAST) {
			a := withTypes(checked)
			for i := range a.Kinds {
				a.Kinds[i] &^= kindHasType
			}
			a.TypeOf, a.XTypeIDs, a.XTypeOf = nil, nil, nil
		},
		"a reference given twice": func(idx *setIndex, checked []*setAST) {
			a := withTypes(checked)
			a.RefIDs = append(a.RefIDs, a.RefIDs[0])
			a.RefOf = append(a.RefOf, a.RefOf[0])
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := &MemorySetCache{m: maps.Clone(recorded.m)}
			rewriteExprs(t, c, change)
			set, err := Compile(srcs, WithSetCache(c))
			require.NoError(t, err)
			require.True(t, set.FromCache())
			sameASTs(t, full, set)
			assert.NotZero(t, unreplayable(t, set), "the broken record is refused")
		})
	}
}

// An expression whose columns do not make a tree (truncated, too long, an
// unknown kind, a count or string past the end, too deep) makes that
// program the full compile's.
func TestSetCacheBrokenTrees(t *testing.T) {
	srcs := someBuiltins(t)
	full, recorded := compiledAndRecorded(t, srcs)
	with := func(checked []*setAST, kind uint8) *setAST {
		for _, a := range checked {
			if slices.ContainsFunc(a.Kinds, func(k uint8) bool { return k&kindMask == kind }) {
				return a
			}
		}
		t.Fatalf("no program with a node of kind %d", kind)
		return nil
	}
	cases := map[string]func(*setIndex, []*setAST){
		"a node less": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.Kinds, a.IDs = a.Kinds[:len(a.Kinds)-1], a.IDs[:len(a.IDs)-1]
		},
		"a node more": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.Kinds, a.IDs = append(a.Kinds, kindUnspecified), append(a.IDs, 999)
		},
		"no nodes": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.Kinds, a.IDs = nil, nil
		},
		"an id less": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.IDs = a.IDs[1:]
		},
		"an unknown kind": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.Kinds[0] = a.Kinds[0]&^kindMask | 0x3e
		},
		"a count past the end": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.Counts[0] = 1 << 30
		},
		"a string past the table": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindIdent)
			a.Strs[0] = uint32(len(idx.Strings))
		},
		"strings missing": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindIdent)
			a.Strs = a.Strs[:len(a.Strs)-1]
		},
		"a position missing": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			a.Starts, a.Stops = a.Starts[1:], a.Stops[1:]
		},
		"a bool that is not one": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindBool)
			a.Nums[0] = 2
		},
		"a number missing": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindBool)
			a.Nums = nil
		},
		"the syntax past the table": func(idx *setIndex, checked []*setAST) {
			with(checked, kindCall).Syntax = uint32(len(idx.Strings))
		},
		"too deep": func(idx *setIndex, checked []*setAST) {
			a := with(checked, kindCall)
			// A chain of negations deeper than cel-go loads.
			var kinds []uint8
			var ids []int64
			var strs, counts []uint32
			for i := range maxReplayDepth + 2 {
				kinds, ids = append(kinds, kindCall), append(ids, int64(i+1))
				strs, counts = append(strs, 0), append(counts, 1)
			}
			*a = setAST{Kinds: append(kinds, kindNull), IDs: append(ids, maxReplayDepth+3), Strs: strs, Counts: counts}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := &MemorySetCache{m: maps.Clone(recorded.m)}
			rewriteExprs(t, c, change)
			set, err := Compile(srcs, WithSetCache(c))
			require.NoError(t, err)
			require.True(t, set.FromCache())
			sameASTs(t, full, set)
			assert.NotZero(t, unreplayable(t, set), "the broken record is refused")
		})
	}
}

// A program whose place in the record's expressions is not one whole
// message after the stream's type definitions makes that program the full
// compile's, found when it is first made.
func TestSetCacheBrokenExprPlaces(t *testing.T) {
	srcs := someBuiltins(t)
	full, recorded := compiledAndRecorded(t, srcs)
	cases := map[string]func(*setIndex){
		"past the end": func(idx *setIndex) {
			idx.Programs[2].Checked.Off = uint32(len(idx.exprs))
		},
		"longer than the stream": func(idx *setIndex) {
			idx.Programs[2].Checked.Len = math.MaxUint32
		},
		"empty": func(idx *setIndex) { idx.Programs[2].Checked.Len = 0 },
		"in the type definitions": func(idx *setIndex) {
			idx.Programs[2].Checked = setExpr{0, idx.ExprTypes}
		},
		"a message and a half": func(idx *setIndex) {
			idx.Programs[2].Checked.Len += idx.Programs[3].Checked.Len / 2
		},
		"half a message": func(idx *setIndex) { idx.Programs[2].Checked.Len /= 2 },
		"cut short":      func(idx *setIndex) { idx.exprs = idx.exprs[:len(idx.exprs)/2] },
		"no type definitions": func(idx *setIndex) {
			idx.exprs = idx.exprs[idx.ExprTypes:]
			for i := range idx.Programs {
				idx.Programs[i].Checked.Off -= idx.ExprTypes
				if idx.Programs[i].Planned.Len != 0 {
					idx.Programs[i].Planned.Off -= idx.ExprTypes
				}
			}
			idx.ExprTypes = 0
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
			n := unreplayable(t, set)
			if name == "cut short" {
				assert.Greater(t, n, 1, "the programs past the end are refused")
			} else if name == "no type definitions" {
				for _, g := range programsByPos(set) {
					assert.Equal(t, len(g.src.r.idx.Programs), n, "no program decodes")
					break
				}
			} else {
				// The decoder goes on after a program that fails.
				assert.Equal(t, 1, n, "only the broken program is refused")
			}
		})
	}
}

// FuzzReplayAST: whatever a record's expression holds, replaying it fails
// or gives a checked AST, never a panic.
func FuzzReplayAST(f *testing.F) {
	idx, recs, _ := recordTexts(f, everyKind)
	for _, rec := range recs {
		var buf bytes.Buffer
		require.NoError(f, gob.NewEncoder(&buf).Encode(&rec))
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a setAST
		if gob.NewDecoder(bytes.NewReader(data)).Decode(&a) != nil {
			return
		}
		r := &replayState{idx: idx}
		ast, err := r.replayAST(&a)
		if err == nil {
			assert.True(t, ast.IsChecked())
		}
		// The lean AST a plan reads: it checks all but the macro calls'
		// trees, so whatever the full one accepts it accepts, with the
		// same tree, types and references.
		plan, perr := r.planAST(&a)
		if perr == nil {
			assert.True(t, plan.IsChecked())
		}
		if err == nil {
			require.NoError(t, perr)
			samePlan(t, ast.NativeRep(), plan)
		}
	})
}

// PairVariableForTest rewrites the record c holds (one set) so that the
// expression of the set's variable program from is that of program to,
// with its cost proof: a record signed by the key that pairs a program with
// another program's expression. For the tests outside the package
// (setcache_cycle_test.go).
func PairVariableForTest(t *testing.T, c *MemorySetCache, from, to int) {
	t.Helper()
	rewriteIndex(t, c, func(idx *setIndex) {
		var vars []int
		for i, sp := range idx.Programs {
			if sp.Variable {
				vars = append(vars, i)
			}
		}
		require.Greater(t, len(vars), max(from, to))
		a, b := &idx.Programs[vars[from]], idx.Programs[vars[to]]
		a.Checked, a.Planned, a.Needs, a.FastUpTo, a.Bound = b.Checked, b.Planned, b.Needs, b.FastUpTo, b.Bound
	})
}
