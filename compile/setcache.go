package compile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// SetCache keeps what a compile of a whole set found, so that a process
// that compiles the same set again (a hook runs one process per event)
// skips parsing, type-checking, analysing and planning it: the compile
// replays the record instead, building the set's structure from the
// sources' parsed documents the record keeps (no YAML is read) and giving
// every expression a program made from its recorded checked expression at
// its first use. A decision evaluates the programs of the
// rules its tool can reach (PolicySet.Candidates) and of the variables and
// counters they read; the others are never decoded or planned.
//
// A record is one set compiled without errors in this build, with these
// options: its key covers the build of celguard and cel-go, the set's
// Digest (every source's name, layer, trust and content), the
// environment's Identity (no record for an environment without one), its
// cost limit, the sizes cost proofs are tried at, and the default verdict
// and rule limit options. It holds the set's warnings, each source's
// parsed document (policy.Document, with each expression's layout,
// policy.Expr.Layout; kept only when every one comes back from the
// encoding equal to the parser's), and for each
// program, in the order the compiler makes them, its text and its
// position, its checked and planned expressions (cel-go's native AST in
// columns, setAST, with tables of the distinct strings, types and
// references of all of them), its cost proof and, for a variable, its
// type.
//
// The record decides verdicts as the AST cache's entries do: whoever can
// rewrite it can change what a rule evaluates, lift a cost limit or hide
// an error. So the record GetSet returns must be authentic (an
// implementation kept where the agent may write authenticates it, as
// hooks.SetCache does with an HMAC under the state key). Anything that
// does not check (another version or key, an expression whose text or
// place differs, a count that differs, an unknown proof size, a bound
// over the limit) makes the compile a full one, with the same answer; a
// program whose recorded expression does not decode at first use is taken
// from a full compile of the set made then.
type SetCache interface {
	// GetSet returns the record stored under key, which the
	// implementation vouches for.
	GetSet(key string) (index []byte, ok bool)
	// PutSet stores a record under key.
	PutSet(key string, index []byte)
}

// WithSetCache makes Compile replay the record of a set it compiled
// before, and record a set it compiles in full. Check (the linter) never
// uses it: it runs every analysis.
func WithSetCache(c SetCache) Option {
	return func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("compile.WithSetCache: nil cache")
		}
		cfg.sets = c
		return nil
	}
}

// MemorySetCache is a SetCache in memory, safe for concurrent use; it
// trusts whoever can reach it.
type MemorySetCache struct {
	mu sync.Mutex
	m  map[string]memorySet
}

type memorySet struct {
	index []byte
}

// GetSet implements SetCache.
func (c *MemorySetCache) GetSet(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[key]
	return s.index, ok
}

// PutSet implements SetCache.
func (c *MemorySetCache) PutSet(key string, index []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]memorySet{}
	}
	c.m[key] = memorySet{index}
}

// Len returns the number of sets kept.
func (c *MemorySetCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// setCacheVersion is the version of the record's format and meaning.
const setCacheVersion = "celguard-set-7"

// setIndex is a record's index.
type setIndex struct {
	Version string
	Key     string
	// Warnings are the set's warnings (PolicySet.Warnings).
	Warnings policy.Diagnostics
	// Programs are the set's programs in the order the compiler makes them.
	Programs []setProgram
	// exprs are the programs' expressions, the record's bytes after the
	// index's gob message (not part of it, so that neither gob nor the
	// replay copies them): one gob stream of setASTs, an empty one first,
	// whose message carries the stream's type definitions and ends at
	// ExprTypes, then the programs' (setExpr places each). A program's
	// expressions are decoded at its first use (replayState.exprAST), so
	// that a call decodes the expressions of the rules its tool reaches
	// and no others.
	exprs     []byte
	ExprTypes uint32
	// Strings are the distinct strings of the programs' expressions
	// (setAST.Strs).
	Strings []string
	// Types are the distinct types of the programs' type maps and of the
	// variables, each with its parameters before it (setType), made once
	// per process (replayState.typ): 9,180 type entries of the
	// recommended bundle hold 27 distinct types.
	Types []setType
	// Refs are the distinct references of the programs' reference maps
	// (without their value, setValueRef), each made once per process
	// (replayState.ref).
	Refs []setRef
	// Sources are the sources' parsed documents, in the sources' order, so
	// that a replay reads no YAML; nil when a document does not survive
	// the encoding unchanged (recordSources), and the replay parses.
	Sources []setSource
}

// setSource is the parsed document of one source (policy.ParseDocument),
// which the index's key covers through the set's Digest: the document's
// exported fields, and the layout of each expression written over several
// lines (policy.Expr.Layout), which the encoding cannot reach.
type setSource struct {
	Doc     policy.Document
	Layouts []setLayout
}

// setLayout is the layout of the expression Expr of the document, in the
// order exprsOf visits them.
type setLayout struct {
	Expr int
	Runs []policy.PosRun
}

// setRef is a reference: an identifier's name or a call's overloads.
type setRef struct {
	Name      string
	Overloads []string
}

// setProgram is the record of one program.
type setProgram struct {
	// Text is the expression's text, "" when the index holds the
	// documents (Sources), whose expressions hold it; Pos its place.
	Text string
	Pos  policy.Pos
	// Checked is the checked expression; Planned the expression planned
	// (inlinePatterns), none (Len 0) when it is Checked.
	Checked setExpr
	Planned setExpr
	// Needs says the expression needs cost accounting
	// (celenv.NeedsCostTracking); FastUpTo and Bound are its proof
	// (Program.FastUpTo) when it does.
	Needs           bool
	FastUpTo, Bound uint64
	// Variable marks a variable's program: TypeOf is its type (an index
	// into the index's Types), CwdOnly says its values are kept per
	// working directory.
	Variable bool
	TypeOf   uint32
	CwdOnly  bool
}

// setExpr places one expression in the index's exprs: the gob message of
// its setAST is exprs[Off:Off+Len].
type setExpr struct {
	Off, Len uint32
}

// madeProgram is a program a full compile made, in order, for the record.
type madeProgram struct {
	prg      *Program
	expr     policy.Expr
	variable *Variable
}

// madeVariable notes that prg, the program made last, is cv's.
func (c *compiler) madeVariable(prg *Program, cv *Variable) {
	if n := len(c.made); n > 0 && c.made[n-1].prg == prg {
		c.made[n-1].variable = cv
	}
}

// setKey is the key of the set's record, or "" when sets are not cached
// (no cache, or an environment without an identity). defaultVerdict is the
// option's, before any policy sets one.
func setKey(cfg config, digest string) string {
	id := cfg.env.Identity()
	if cfg.sets == nil || id == "" {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%v\x00%d\x00%d", setCacheVersion, buildID(), digest, id,
		cfg.env.CostLimit(), boundSizes, cfg.defaultVerdict, cfg.maxRules)
	return "set:" + hex.EncodeToString(h.Sum(nil))
}

// record stores the record of a set compiled in full without errors. A
// program whose expression does not encode leaves the set unrecorded; one
// that does not decode when replayed is compiled again then (make).
func (c *compiler) record(key string) {
	idx := setIndex{Version: setCacheVersion, Key: key, Warnings: c.set.warnings}
	strs := &setStrings{}
	typs := &setTypes{}
	refOf := map[string]uint32{}
	typeN := typs.add
	refN := func(r *celast.ReferenceInfo) uint32 {
		k := r.Name + "\x00" + strings.Join(r.OverloadIDs, "\x00")
		n, ok := refOf[k]
		if !ok {
			n = uint32(len(idx.Refs))
			refOf[k] = n
			idx.Refs = append(idx.Refs, setRef{r.Name, r.OverloadIDs})
		}
		return n
	}
	var exprs bytes.Buffer
	enc := gob.NewEncoder(&exprs)
	if err := enc.Encode(&setAST{}); err != nil || exprs.Len() > math.MaxUint32 {
		return
	}
	idx.ExprTypes = uint32(exprs.Len())
	put := func(a *cel.Ast) (setExpr, error) {
		rec, err := recordAST(a, strs, typeN, refN)
		if err != nil {
			return setExpr{}, err
		}
		off := exprs.Len()
		if err := enc.Encode(&rec); err != nil {
			return setExpr{}, err
		}
		if exprs.Len() > math.MaxUint32 {
			return setExpr{}, errors.New("expressions too long to record")
		}
		return setExpr{uint32(off), uint32(exprs.Len() - off)}, nil
	}
	for _, m := range c.made {
		p := m.prg
		sp := setProgram{Text: m.expr.Text, Pos: m.expr.Pos,
			Needs: p.accounts(), FastUpTo: p.fastUpTo, Bound: p.bound}
		var err error
		if sp.Checked, err = put(p.ast); err != nil {
			return
		}
		if p.planned != p.ast {
			if sp.Planned, err = put(p.planned); err != nil {
				return
			}
		}
		if v := m.variable; v != nil {
			if sp.TypeOf, err = typeN(v.Type); err != nil {
				return
			}
			sp.Variable, sp.CwdOnly = true, v.cwd != nil
		}
		idx.Programs = append(idx.Programs, sp)
	}
	idx.Strings = strs.list
	idx.Types = typs.list
	idx.exprs = exprs.Bytes()
	idx.Sources = recordSources(c.docs)
	if idx.Sources != nil {
		// The documents hold the texts: a program names its expression by
		// its place alone (take).
		for i := range idx.Programs {
			idx.Programs[i].Text = ""
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&idx); err != nil {
		return
	}
	buf.Write(idx.exprs)
	c.cfg.sets.PutSet(key, buf.Bytes())
}

// recordSources is the record of the parsed documents docs; nil when one
// does not come back from the record equal to itself (reflect.DeepEqual:
// an unexported field the encoding drops, an empty list or map it makes
// nil, an expression whose layout it cannot write), and the replay then
// parses the sources.
func recordSources(docs []policy.Document) []setSource {
	out := make([]setSource, len(docs))
	for i := range docs {
		ok := true
		n := 0
		exprsOf(reflect.ValueOf(&docs[i]).Elem(), func(e *policy.Expr) {
			runs, fine := e.Layout()
			if !fine {
				ok = false
			} else if runs != nil {
				out[i].Layouts = append(out[i].Layouts, setLayout{n, runs})
			}
			n++
		})
		if !ok {
			return nil
		}
		out[i].Doc = docs[i]
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(out); err != nil {
		return nil
	}
	var back []setSource
	if err := gob.NewDecoder(&buf).Decode(&back); err != nil {
		return nil
	}
	rebuilt, ok := replaySources(back, len(docs))
	if !ok || !sameModel(reflect.ValueOf(rebuilt), reflect.ValueOf(docs)) {
		return nil
	}
	return out
}

// sameModel is reflect.DeepEqual for the policy model, unexported fields
// included, but for expressions, which it compares by their text, place
// and layout (policy.Expr.Layout) rather than rune by rune; a kind the
// model does not use (interface, func, channel) is never the same.
func sameModel(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Pointer() == b.Pointer() || sameModel(a.Elem(), b.Elem())
	case reflect.Struct:
		if a.Type() == exprType && a.CanInterface() && b.CanInterface() {
			ea, eb := a.Interface().(policy.Expr), b.Interface().(policy.Expr)
			la, oka := ea.Layout()
			lb, okb := eb.Layout()
			// The runs themselves: a layout does not tell nil from empty.
			ta, tb := a.FieldByName("runs"), b.FieldByName("runs")
			return oka && okb && ea.Text == eb.Text && ea.Pos == eb.Pos && slices.Equal(la, lb) &&
				ta.IsValid() && tb.IsValid() && ta.Kind() == reflect.Slice && ta.IsNil() == tb.IsNil() && ta.Len() == tb.Len()
		}
		for i := range a.NumField() {
			if !sameModel(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !sameModel(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			w := b.MapIndex(it.Key())
			if !w.IsValid() || !sameModel(it.Value(), w) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	}
	return false
}

// replaySources rebuilds n parsed documents from their record; ok is false
// when the record is not of n documents or a layout does not fit.
func replaySources(rec []setSource, n int) ([]policy.Document, bool) {
	if len(rec) != n {
		return nil, false
	}
	docs := make([]policy.Document, n)
	for i := range rec {
		docs[i] = rec[i].Doc
		ls := rec[i].Layouts
		k, ok := 0, true
		exprsOf(reflect.ValueOf(&docs[i]).Elem(), func(e *policy.Expr) {
			if ok && len(ls) > 0 && ls[0].Expr == k {
				*e, ok = e.WithLayout(ls[0].Runs)
				ls = ls[1:]
			}
			k++
		})
		if !ok || len(ls) != 0 {
			return nil, false
		}
	}
	return docs, true
}

// exprType is the type of an expression in the policy model.
var exprType = reflect.TypeFor[policy.Expr]()

// holding says, by type, whether a value of the type can hold an
// expression that exprsOf reaches.
var holding sync.Map

// holdsExpr reports whether a value of type t can hold an expression
// that exprsOf reaches (through exported fields, pointers, lists).
func holdsExpr(t reflect.Type) bool {
	if h, ok := holding.Load(t); ok {
		return h.(bool)
	}
	holding.Store(t, true) // a type that holds itself is walked
	h := false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		h = holdsExpr(t.Elem())
	case reflect.Struct:
		h = t == exprType
		for i := 0; i < t.NumField() && !h; i++ {
			h = t.Field(i).IsExported() && holdsExpr(t.Field(i).Type)
		}
	}
	holding.Store(t, h)
	return h
}

// exprsOf calls f with every expression in v (addressable), in the order
// of the model's fields and lists; maps hold none (recordSources's check
// would find one).
func exprsOf(v reflect.Value, f func(*policy.Expr)) {
	if !holdsExpr(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			exprsOf(v.Elem(), f)
		}
	case reflect.Struct:
		if v.Type() == exprType {
			f(v.Addr().Interface().(*policy.Expr))
			return
		}
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				exprsOf(v.Field(i), f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			exprsOf(v.Index(i), f)
		}
	}
}

// replayState is a compile from a record: the record, the next program,
// and what a full compile needs when a recorded expression fails.
type replayState struct {
	idx    setIndex
	next   int
	failed bool
	// docs are the sources' parsed documents from the record; nil when
	// the record has none and the sources are parsed.
	docs []policy.Document
	// srcs and cfg compile the set in full, once, for a program whose
	// record fails at its first use (fullProgram).
	srcs   []policy.Source
	digest string
	cfg    config
	full   struct {
		once  sync.Once
		progs []*Program
	}
	// types are the index's Types converted, made at first use; refs
	// its Refs.
	types struct {
		mu   sync.Mutex
		made []*types.Type
	}
	refs struct {
		mu   sync.Mutex
		made []*celast.ReferenceInfo
	}
	// exprs decodes the index's exprs: one decoder, which has read the
	// stream's type definitions, reading one program's message at a time.
	exprs struct {
		mu  sync.Mutex
		dec *gob.Decoder
		in  bytes.Reader
	}
}

// exprAST is the checked expression the index's exprs hold at e, decoded
// and built; an error when e is not one whole message of the stream after
// its type definitions, or does not decode or build.
func (r *replayState) exprAST(e setExpr) (*cel.Ast, error) {
	a, err := r.decodeExpr(e)
	if err != nil {
		return nil, err
	}
	return r.replayAST(a)
}

// decodeExpr is the setAST the index's exprs hold at e.
func (r *replayState) decodeExpr(e setExpr) (*setAST, error) {
	x := &r.exprs
	x.mu.Lock()
	defer x.mu.Unlock()
	all := r.idx.exprs
	end := uint64(e.Off) + uint64(e.Len)
	if e.Len == 0 || e.Off < r.idx.ExprTypes || end > uint64(len(all)) {
		return nil, errReplayAST
	}
	if x.dec == nil {
		x.in.Reset(all[:r.idx.ExprTypes])
		dec := gob.NewDecoder(&x.in)
		var empty setAST
		if err := dec.Decode(&empty); err != nil || x.in.Len() != 0 {
			return nil, errReplayAST
		}
		x.dec = dec
	}
	x.in.Reset(all[e.Off:end])
	a := &setAST{}
	if err := x.dec.Decode(a); err != nil || x.in.Len() != 0 {
		// A decoder that failed mid-message starts afresh.
		x.dec = nil
		return nil, errReplayAST
	}
	return a, nil
}

// replaySet compiles the set from its record under key: nil when there is
// none or anything in it does not check.
func replaySet(srcs []policy.Source, digest string, cfg config, key string) *PolicySet {
	ib, ok := cfg.sets.GetSet(key)
	if !ok {
		return nil
	}
	r := &replayState{srcs: srcs, digest: digest, cfg: cfg}
	in := bytes.NewReader(ib)
	if err := gob.NewDecoder(in).Decode(&r.idx); err != nil ||
		r.idx.Version != setCacheVersion || r.idx.Key != key || r.idx.Warnings.HasErrors() {
		return nil
	}
	// The decoder reads a bytes.Reader message by message (it is an
	// io.ByteReader, so gob adds no buffer): what is left is the
	// expressions.
	r.idx.exprs = ib[len(ib)-in.Len():]
	if r.idx.Sources != nil {
		if r.docs, ok = replaySources(r.idx.Sources, len(srcs)); !ok {
			return nil
		}
	}
	c := newCompiler(cfg)
	c.replay = r
	c.compile(srcs, digest, false)
	if r.failed || r.next != len(r.idx.Programs) || c.ds.HasErrors() {
		return nil
	}
	c.set.warnings = slices.Clone(r.idx.Warnings)
	c.set.fromCache = true
	return c.set
}

// take returns the next program's record when it is the one of e; else
// the replay fails.
func (c *compiler) take(e policy.Expr) (int, *setProgram, bool) {
	r := c.replay
	if r.failed || r.next >= len(r.idx.Programs) {
		r.failed = true
		return 0, nil, false
	}
	i := r.next
	sp := &r.idx.Programs[i]
	limit := c.cfg.env.CostLimit()
	switch {
	case sp.Pos != e.Pos,
		r.docs == nil && sp.Text != e.Text,
		r.docs != nil && sp.Text != "",
		!sp.Needs && (sp.FastUpTo != math.MaxUint64 || sp.Bound != 0),
		sp.Needs && sp.FastUpTo == 0 && sp.Bound != 0,
		sp.Needs && sp.FastUpTo != 0 && (!slices.Contains(boundSizes, sp.FastUpTo) || sp.Bound > limit):
		r.failed = true
		return 0, nil, false
	}
	r.next++
	return i, sp, true
}

// replayProgram is the program of e from the record, made at its first
// use; nil when the replay fails.
func (c *compiler) replayProgram(e policy.Expr) *Program {
	i, sp, ok := c.take(e)
	if !ok || sp.Variable {
		c.replay.failed = true
		return nil
	}
	return &Program{src: &programSource{r: c.replay, i: i}, fastUpTo: sp.FastUpTo, bound: sp.Bound}
}

// replayVariable is replayProgram for a variable, with its type and
// whether its values are kept per working directory.
func (c *compiler) replayVariable(e policy.Expr) (*Program, *cel.Type, bool, bool) {
	i, sp, ok := c.take(e)
	if !ok || !sp.Variable {
		c.replay.failed = true
		return nil, nil, false, false
	}
	typ, err := c.replay.typ(sp.TypeOf)
	if err != nil || (sp.CwdOnly && !plainType(typ)) {
		c.replay.failed = true
		return nil, nil, false, false
	}
	return &Program{src: &programSource{r: c.replay, i: i}, fastUpTo: sp.FastUpTo, bound: sp.Bound}, typ, sp.CwdOnly, true
}

// programSource is where a replayed program is made from.
type programSource struct {
	r *replayState
	i int
}

// make makes p from its record; when that fails, p is the program of a
// full compile of the set, and when that fails too, a program that fails
// every evaluation (the rule's failure policy applies).
func (p *Program) make() {
	src := p.src
	err := src.fill(p)
	if err == nil {
		return
	}
	p.trackedLazy = nil
	if full := src.r.fullProgram(src.i); full != nil {
		p.tracked, p.fast, p.fastUpTo, p.bound = full.tracked, full.fast, full.fastUpTo, full.bound
		p.ast, p.planned, p.plan, p.lazy = full.ast, full.planned, full.plan, full.lazy
		return
	}
	p.tracked, p.fast, p.fastUpTo, p.lazy = failedProgram{fmt.Errorf("compiled-set cache: %w", err)}, nil, 0, nil
}

// makeAST builds the checked and planned expressions of p, made from its
// record (fill planned it from the lean AST): from the record, and when
// that fails, or they do not need the accounting the record says, the full
// compile's; nil when that fails too.
func (p *Program) makeAST() {
	if p.ast != nil {
		return // the full compile's (make)
	}
	src := p.src
	sp := &src.r.idx.Programs[src.i]
	ast, err := src.r.exprAST(sp.Checked)
	planned := ast
	if err == nil && sp.Planned.Len != 0 {
		planned, err = src.r.exprAST(sp.Planned)
	}
	if err == nil && celenv.NeedsCostTracking(ast) == sp.Needs && celenv.NeedsCostTracking(planned) == sp.Needs {
		p.ast, p.planned = ast, planned
		return
	}
	if full := src.r.fullProgram(src.i); full != nil {
		p.ast, p.planned = full.ast, full.planned
	}
}

// fullTracked is the program with accounting of the full compile, for a
// replayed one whose planning failed (err); when that compile fails too, a
// program that fails every evaluation.
func (s *programSource) fullTracked(err error) cel.Program {
	if full := s.r.fullProgram(s.i); full != nil {
		return full.Tracked()
	}
	return failedProgram{fmt.Errorf("compiled-set cache: %w", err)}
}

// fill makes p from its record.
func (s *programSource) fill(p *Program) error {
	sp := &s.r.idx.Programs[s.i]
	e := sp.Checked
	if sp.Planned.Len != 0 {
		e = sp.Planned
	}
	a, err := s.r.decodeExpr(e)
	if err != nil {
		return err
	}
	plan, err := s.r.planAST(a)
	if err != nil {
		return err
	}
	if celenv.NeedsCostTrackingExpr(plan.Expr()) != sp.Needs {
		return errors.New("the recorded cost accounting does not match the expression")
	}
	env := s.r.cfg.env
	p.plan = plan
	if sp.Needs {
		// Planned with the accounting at its first use (trackedProgram),
		// without it at its first call within FastUpTo (For).
		p.trackedLazy = &lazyProgram{env: env}
		if sp.FastUpTo > 0 {
			p.setFast(env, sp.FastUpTo, sp.Bound)
		}
		return nil
	}
	prg, err := env.CEL().PlanProgram(plan, env.UntrackedProgramOptions()...)
	if err != nil {
		return err
	}
	p.tracked, p.fast, p.fastUpTo = prg, prg, math.MaxUint64
	return nil
}

// typ is the index's type n; the table is made at the first type asked
// for (readTypes).
func (r *replayState) typ(n uint32) (*types.Type, error) {
	r.types.mu.Lock()
	defer r.types.mu.Unlock()
	if int64(n) >= int64(len(r.idx.Types)) {
		return nil, errors.New("a recorded type is missing")
	}
	if r.types.made == nil {
		r.types.made = readTypes(r.idx.Types)
	}
	if t := r.types.made[n]; t != nil {
		return t, nil
	}
	return nil, errRecordedType
}

// ref is the index's reference n, made once; ok is false when there is
// none. The references of a replayed set's ASTs are shared, as cel-go's
// ast.Copy shares them: nothing changes a checked AST's references.
func (r *replayState) ref(n uint32) (*celast.ReferenceInfo, bool) {
	r.refs.mu.Lock()
	defer r.refs.mu.Unlock()
	if int64(n) >= int64(len(r.idx.Refs)) {
		return nil, false
	}
	if r.refs.made == nil {
		r.refs.made = make([]*celast.ReferenceInfo, len(r.idx.Refs))
	}
	if ref := r.refs.made[n]; ref != nil {
		return ref, true
	}
	ref := &celast.ReferenceInfo{Name: r.idx.Refs[n].Name, OverloadIDs: slices.Clip(r.idx.Refs[n].Overloads)}
	r.refs.made[n] = ref
	return ref, true
}

// fullProgram is program i of a full compile of the set, made once; nil
// when that compile fails or makes other programs.
func (r *replayState) fullProgram(i int) *Program {
	r.full.once.Do(func() {
		cfg := r.cfg
		cfg.sets = nil
		c := newCompiler(cfg)
		c.compile(r.srcs, r.digest, false)
		if c.ds.HasErrors() || len(c.made) != len(r.idx.Programs) {
			return
		}
		for _, m := range c.made {
			r.full.progs = append(r.full.progs, m.prg)
		}
	})
	if i < len(r.full.progs) {
		return r.full.progs[i]
	}
	return nil
}

// failedProgram is a program that fails every evaluation.
type failedProgram struct{ err error }

// Eval implements cel.Program.
func (f failedProgram) Eval(any) (ref.Val, *cel.EvalDetails, error) { return nil, nil, f.err }

// ContextEval implements cel.Program.
func (f failedProgram) ContextEval(context.Context, any) (ref.Val, *cel.EvalDetails, error) {
	return nil, nil, f.err
}

// ConcurrentEval implements cel.Program.
func (f failedProgram) ConcurrentEval(context.Context, any) <-chan cel.EvalResult {
	ch := make(chan cel.EvalResult, 1)
	ch <- cel.EvalResult{Err: f.err}
	close(ch)
	return ch
}
