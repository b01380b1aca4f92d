package compile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// SetCache keeps what a compile of a whole set found, so that a process
// that compiles the same set again (a hook runs one process per event)
// skips type-checking, analysing and planning it: the compile replays the
// record instead, building the set's structure from the sources as usual
// but giving every expression a program made from its recorded checked
// expression at its first use. A decision evaluates the programs of the
// rules its tool can reach (PolicySet.Candidates) and of the variables and
// counters they read; the others are never decoded or planned.
//
// A record is one set compiled without errors in this build, with these
// options: its key covers the build of celguard and cel-go, the set's
// Digest (every source's name, layer, trust and content), the
// environment's Identity (no record for an environment without one), its
// cost limit, the sizes cost proofs are tried at, and the default verdict
// and rule limit options. It holds the set's warnings, and for each
// program, in the order the compiler makes them, its text and its
// position, its checked and planned expressions (cel-go's
// CheckedExpr protobuf without type map and value-free references, which
// the index keeps as tables of distinct types and references), its cost
// proof and, for a variable, its type.
//
// The record decides verdicts as the AST cache's entries do: whoever can
// rewrite it can change what a rule evaluates, lift a cost limit or hide
// an error. So the index GetSet returns must be authentic (an
// implementation kept where the agent may write authenticates it, as
// hooks.SetCache does with an HMAC under the state key); the blobs need
// not be: each is used only if its SHA-256 is the one the index gives.
// Anything that does not check (another version or key, an expression
// whose text or place differs, a count that differs, an unknown proof
// size, a bound over the limit) makes the compile a full one, with the
// same answer; a program whose recorded expression does not decode at
// first use is taken from a full compile of the set made then.
type SetCache interface {
	// GetSet returns the record stored under key: its index, which the
	// implementation vouches for, and its blobs, which it need not.
	GetSet(key string) (index []byte, blobs [][]byte, ok bool)
	// PutSet stores a record under key.
	PutSet(key string, index []byte, blobs [][]byte)
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
	blobs [][]byte
}

// GetSet implements SetCache.
func (c *MemorySetCache) GetSet(key string) ([]byte, [][]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[key]
	return s.index, s.blobs, ok
}

// PutSet implements SetCache.
func (c *MemorySetCache) PutSet(key string, index []byte, blobs [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]memorySet{}
	}
	c.m[key] = memorySet{index, blobs}
}

// Len returns the number of sets kept.
func (c *MemorySetCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// setCacheVersion is the version of the record's format and meaning.
const setCacheVersion = "celguard-set-2"

// setIndex is a record's index.
type setIndex struct {
	Version string
	Key     string
	// Warnings are the set's warnings (PolicySet.Warnings).
	Warnings policy.Diagnostics
	// Programs are the set's programs in the order the compiler makes them.
	Programs []setProgram
	// Types are the distinct types of the programs' type maps
	// (v1alpha1.Type protobuf), each converted once per process
	// (replayState.typ): a blob's CheckedExpr carries no type map, which
	// was most of the cost of decoding one (every type went through a
	// protobuf round trip in cel-go's conversion).
	Types [][]byte
	// Refs are the distinct references of the programs' reference maps
	// that name no value; one that names a value (an enum constant) stays
	// in its blob.
	Refs []setRef
}

// setRef is a reference: an identifier's name or a call's overloads.
type setRef struct {
	Name      string
	Overloads []string
}

// setTypeMap is the type map of a recorded checked expression: the
// expression with id IDs[i] has type Types[Of[i]] of the index; and its
// reference map but for references to values: the expression with id
// RefIDs[i] refers to Refs[RefOf[i]].
type setTypeMap struct {
	IDs    []int64
	Of     []uint32
	RefIDs []int64
	RefOf  []uint32
}

// setProgram is the record of one program.
type setProgram struct {
	// Text is the expression's text, Pos its place.
	Text string
	Pos  policy.Pos
	// Checked is the blob of the checked expression; Planned the one of
	// the expression planned (inlinePatterns), -1 when it is Checked.
	Checked, Planned       int
	CheckedSum, PlannedSum [32]byte
	// CheckedTypes and PlannedTypes are their type maps.
	CheckedTypes, PlannedTypes setTypeMap
	// Needs says the expression needs cost accounting
	// (celenv.NeedsCostTracking); FastUpTo and Bound are its proof
	// (Program.FastUpTo) when it does.
	Needs           bool
	FastUpTo, Bound uint64
	// Variable marks a variable's program: Type is its type
	// (v1alpha1.Type protobuf), CwdOnly says its values are kept per
	// working directory.
	Variable bool
	Type     []byte
	CwdOnly  bool
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
	var blobs [][]byte
	typeOf, refOf := map[string]uint32{}, map[string]uint32{}
	add := func(ast *cel.Ast) (int, [32]byte, setTypeMap, bool) {
		var tm setTypeMap
		pb, err := cel.AstToCheckedExpr(ast)
		if err != nil {
			return 0, [32]byte{}, tm, false
		}
		for _, id := range slices.Sorted(maps.Keys(pb.TypeMap)) {
			tb, err := proto.MarshalOptions{Deterministic: true}.Marshal(pb.TypeMap[id])
			if err != nil {
				return 0, [32]byte{}, tm, false
			}
			n, ok := typeOf[string(tb)]
			if !ok {
				n = uint32(len(idx.Types))
				typeOf[string(tb)] = n
				idx.Types = append(idx.Types, tb)
			}
			tm.IDs, tm.Of = append(tm.IDs, id), append(tm.Of, n)
		}
		pb.TypeMap = nil
		for _, id := range slices.Sorted(maps.Keys(pb.ReferenceMap)) {
			ref := pb.ReferenceMap[id]
			if ref.Value != nil {
				continue
			}
			k := ref.Name + "\x00" + strings.Join(ref.OverloadId, "\x00")
			n, ok := refOf[k]
			if !ok {
				n = uint32(len(idx.Refs))
				refOf[k] = n
				idx.Refs = append(idx.Refs, setRef{ref.Name, ref.OverloadId})
			}
			tm.RefIDs, tm.RefOf = append(tm.RefIDs, id), append(tm.RefOf, n)
			delete(pb.ReferenceMap, id)
		}
		b, err := proto.Marshal(pb)
		if err != nil {
			return 0, [32]byte{}, tm, false
		}
		blobs = append(blobs, b)
		return len(blobs) - 1, sha256.Sum256(b), tm, true
	}
	for _, m := range c.made {
		p := m.prg
		sp := setProgram{Text: m.expr.Text, Pos: m.expr.Pos, Planned: -1,
			Needs: p.accounts(), FastUpTo: p.fastUpTo, Bound: p.bound}
		var ok bool
		if sp.Checked, sp.CheckedSum, sp.CheckedTypes, ok = add(p.ast); !ok {
			return
		}
		if p.planned != p.ast {
			if sp.Planned, sp.PlannedSum, sp.PlannedTypes, ok = add(p.planned); !ok {
				return
			}
		}
		if v := m.variable; v != nil {
			t, err := types.TypeToExprType(v.Type)
			if err != nil {
				return
			}
			if sp.Type, err = proto.Marshal(t); err != nil {
				return
			}
			sp.Variable, sp.CwdOnly = true, v.cwd != nil
		}
		idx.Programs = append(idx.Programs, sp)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&idx); err != nil {
		return
	}
	c.cfg.sets.PutSet(key, buf.Bytes(), blobs)
}

// replayState is a compile from a record: the record, the next program,
// and what a full compile needs when a recorded expression fails.
type replayState struct {
	idx    setIndex
	blobs  [][]byte
	next   int
	failed bool
	// srcs and cfg compile the set in full, once, for a program whose
	// record fails at its first use (fullProgram).
	srcs   []policy.Source
	digest string
	cfg    config
	full   struct {
		once  sync.Once
		progs []*Program
	}
	// types are the index's Types converted, made at first use.
	types struct {
		mu   sync.Mutex
		made []*types.Type
	}
}

// replaySet compiles the set from its record under key: nil when there is
// none or anything in it does not check.
func replaySet(srcs []policy.Source, digest string, cfg config, key string) *PolicySet {
	ib, blobs, ok := cfg.sets.GetSet(key)
	if !ok {
		return nil
	}
	r := &replayState{blobs: blobs, srcs: srcs, digest: digest, cfg: cfg}
	if err := gob.NewDecoder(bytes.NewReader(ib)).Decode(&r.idx); err != nil ||
		r.idx.Version != setCacheVersion || r.idx.Key != key || r.idx.Warnings.HasErrors() {
		return nil
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
	case sp.Text != e.Text || sp.Pos != e.Pos,
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
	var pt exprpb.Type
	if err := proto.Unmarshal(sp.Type, &pt); err != nil {
		c.replay.failed = true
		return nil, nil, false, false
	}
	typ, err := types.ExprTypeToType(&pt)
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
	if full := src.r.fullProgram(src.i); full != nil {
		p.tracked, p.fast, p.fastUpTo, p.bound = full.tracked, full.fast, full.fastUpTo, full.bound
		p.ast, p.planned, p.lazy = full.ast, full.planned, full.lazy
		return
	}
	p.tracked, p.fast, p.fastUpTo, p.lazy = failedProgram{fmt.Errorf("compiled-set cache: %w", err)}, nil, 0, nil
}

// fill makes p from its record.
func (s *programSource) fill(p *Program) error {
	sp := s.r.idx.Programs[s.i]
	ast, err := s.r.ast(sp.Checked, sp.CheckedSum, sp.CheckedTypes)
	if err != nil {
		return err
	}
	planned := ast
	if sp.Planned >= 0 {
		if planned, err = s.r.ast(sp.Planned, sp.PlannedSum, sp.PlannedTypes); err != nil {
			return err
		}
	}
	if celenv.NeedsCostTracking(ast) != sp.Needs {
		return errors.New("the recorded cost accounting does not match the expression")
	}
	env := s.r.cfg.env
	prg, err := env.CEL().Program(planned, env.ProgramOptionsFor(planned)...)
	if err != nil {
		return err
	}
	p.tracked, p.ast, p.planned = prg, ast, planned
	switch {
	case !sp.Needs:
		p.fast, p.fastUpTo = prg, math.MaxUint64
	case sp.FastUpTo > 0:
		p.setFast(env, sp.FastUpTo, sp.Bound)
	}
	return nil
}

// ast decodes blob i with the type map tm, checking the blob is the one
// the index names.
func (r *replayState) ast(i int, sum [32]byte, tm setTypeMap) (*cel.Ast, error) {
	if i < 0 || i >= len(r.blobs) || sha256.Sum256(r.blobs[i]) != sum {
		return nil, errors.New("a recorded expression is missing or altered")
	}
	var pb exprpb.CheckedExpr
	if err := proto.Unmarshal(r.blobs[i], &pb); err != nil || len(pb.TypeMap) != 0 ||
		len(tm.IDs) != len(tm.Of) || len(tm.RefIDs) != len(tm.RefOf) {
		return nil, errors.New("a recorded expression does not decode")
	}
	ast, err := cel.CheckedExprToAstWithSource(&pb, nil)
	if err != nil {
		return nil, errors.New("a recorded expression does not decode")
	}
	native := ast.NativeRep()
	for k, id := range tm.IDs {
		t, err := r.typ(tm.Of[k])
		if err != nil {
			return nil, err
		}
		native.SetType(id, t)
	}
	for k, id := range tm.RefIDs {
		n := tm.RefOf[k]
		if int64(n) >= int64(len(r.idx.Refs)) {
			return nil, errors.New("a recorded reference is missing")
		}
		if _, dup := native.ReferenceMap()[id]; dup {
			return nil, errors.New("a recorded reference is given twice")
		}
		ref := r.idx.Refs[n]
		native.SetReference(id, &celast.ReferenceInfo{Name: ref.Name, OverloadIDs: slices.Clip(ref.Overloads)})
	}
	if !ast.IsChecked() {
		return nil, errors.New("a recorded expression has no types")
	}
	return ast, nil
}

// typ is the index's type n, converted once.
func (r *replayState) typ(n uint32) (*types.Type, error) {
	r.types.mu.Lock()
	defer r.types.mu.Unlock()
	if int64(n) >= int64(len(r.idx.Types)) {
		return nil, errors.New("a recorded type is missing")
	}
	if r.types.made == nil {
		r.types.made = make([]*types.Type, len(r.idx.Types))
	}
	if t := r.types.made[n]; t != nil {
		return t, nil
	}
	var pt exprpb.Type
	if err := proto.Unmarshal(r.idx.Types[n], &pt); err != nil {
		return nil, errors.New("a recorded type does not decode")
	}
	t, err := types.ExprTypeToType(&pt)
	if err != nil {
		return nil, errors.New("a recorded type does not decode")
	}
	r.types.made[n] = t
	return t, nil
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
