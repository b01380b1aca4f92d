package compile

import (
	"errors"
	"maps"
	"math"
	"slices"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// setAST is a checked expression as the compiled-set record keeps it:
// cel-go's native AST (common/ast), its source information, type map and
// reference map, written as columns of numbers that the record's gob
// decodes in bulk and that replayAST builds the AST from without any
// intermediate form.
//
// It replaced cel-go's CheckedExpr protobuf (celguard-set-3), whose decode
// and conversion (cel.CheckedExprToAst) cost about 565k instructions per
// expression on the recommended bundle: a message, a oneof wrapper and a
// position map entry per node decoded by reflection, then every node
// rebuilt, and every constant marshalled and unmarshalled once more into
// another protobuf package (ast.ConstantToVal).
//
// The trees are written in preorder: the expression's, then one per macro
// call (MacroIDs). Each node is one entry of Kinds and IDs; what else it
// holds is read, in preorder, from the column its kind names:
//   - Strs: indexes into the index's Strings (setIndex.Strings): a call's
//     function, an identifier, a selected or tested field, a
//     comprehension's three variables, a struct's type name and its
//     fields' names, a string or bytes literal;
//   - Counts: a call's arguments, a list's elements and then its optional
//     indexes (OptIdx), a map's entries, a struct's fields;
//   - Nums: a bool, int, uint or double literal's bits.
//
// A node flagged kindHasPos has its offset range in Starts and Stops; one
// flagged kindHasType its type in TypeOf (an index into the index's
// Types). Ranges and types of ids that no node has (the checker keeps
// some) are in XPos and XTypes.
type setAST struct {
	Kinds  []uint8
	IDs    []int64
	Strs   []uint32
	Counts []uint32
	Nums   []uint64
	OptIdx []int32

	Starts, Stops []int32
	TypeOf        []uint32

	XPosIDs        []int64
	XStarts, XStop []int32
	XTypeIDs       []int64
	XTypeOf        []uint32

	// MacroIDs are the ids of the macro calls, whose trees follow the
	// expression's.
	MacroIDs []int64
	// Syntax and Location are the source information's syntax version and
	// description (indexes into Strings), Lines its line offsets, Ext its
	// extensions.
	Syntax, Location uint32
	Lines            []int32
	Ext              []celast.Extension

	// RefIDs and RefOf are the reference map but for references to
	// values: the expression with id RefIDs[i] refers to the index's
	// Refs[RefOf[i]]. ValueRefs are the references to values (an enum
	// constant), which the index does not share.
	RefIDs    []int64
	RefOf     []uint32
	ValueRefs []setValueRef
}

// setValueRef is a reference to a value: the index's reference Ref and
// the value, a literal of kind Kind with Num or Str as in setAST.
type setValueRef struct {
	ID   int64
	Ref  uint32
	Kind uint8
	Num  uint64
	Str  uint32
}

// The kinds of setAST's nodes (the low bits of a Kinds entry).
const (
	kindUnspecified    uint8 = iota
	kindCall                 // Strs: function; Counts: arguments; children: the arguments
	kindMemberCall           // as kindCall; children: the target, then the arguments
	kindComprehension        // Strs: iter var, second iter var, accumulator; children: range, init, condition, step, result
	kindIdent                // Strs: name
	kindList                 // Counts: elements, optional indexes (OptIdx); children: the elements
	kindMap                  // Counts: entries; children: kindMapEntry nodes
	kindMapEntry             // children: key, value
	kindOptMapEntry          // an optional entry, as kindMapEntry
	kindSelect               // Strs: field; children: operand
	kindTest                 // a presence test, as kindSelect
	kindStruct               // Strs: type name; Counts: fields; children: kindStructField nodes
	kindStructField          // Strs: field; children: value
	kindOptStructField       // an optional field, as kindStructField
	kindNull                 // the null literal
	kindBool                 // Nums: 0 or 1
	kindInt                  // Nums: the int64's bits
	kindUint                 // Nums: the value
	kindDouble               // Nums: the float64's bits
	kindString               // Strs: the value
	kindBytes                // Strs: the value
	kindCount                // the number of kinds

	kindMask    uint8 = 0x3f
	kindHasPos  uint8 = 0x80
	kindHasType uint8 = 0x40
)

// maxReplayDepth bounds the nesting of a replayed expression as cel-go
// bounds a loaded one (its parser's recursion limit).
const maxReplayDepth = 250

// errReplayAST is a record's expression that does not decode.
var errReplayAST = errors.New("a recorded expression does not decode")

// setStrings is the table of strings of a record being written.
type setStrings struct {
	list []string
	of   map[string]uint32
}

func (s *setStrings) add(v string) uint32 {
	if n, ok := s.of[v]; ok {
		return n
	}
	if s.of == nil {
		s.of = map[string]uint32{}
	}
	n := uint32(len(s.list))
	s.of[v] = n
	s.list = append(s.list, v)
	return n
}

// astWriter writes one checked expression as a setAST.
type astWriter struct {
	out   setAST
	strs  *setStrings
	typeN func(*types.Type) (uint32, error)
	pos   map[int64]celast.OffsetRange
	typ   map[int64]*types.Type
	err   error
}

// recordAST is the record of a checked expression: strs collects its
// strings, typeN gives the index of a type in the index's Types and refN
// the index of a reference (without value) in its Refs.
func recordAST(a *cel.Ast, strs *setStrings, typeN func(*types.Type) (uint32, error),
	refN func(*celast.ReferenceInfo) uint32) (setAST, error) {
	native := a.NativeRep()
	info := native.SourceInfo()
	w := &astWriter{strs: strs, typeN: typeN, pos: maps.Clone(info.OffsetRanges()), typ: maps.Clone(native.TypeMap())}
	w.expr(native.Expr())
	macros := info.MacroCalls()
	for _, id := range slices.Sorted(maps.Keys(macros)) {
		w.out.MacroIDs = append(w.out.MacroIDs, id)
		w.expr(macros[id])
	}
	if w.err != nil {
		return setAST{}, w.err
	}
	for _, id := range slices.Sorted(maps.Keys(w.pos)) {
		w.out.XPosIDs = append(w.out.XPosIDs, id)
		w.out.XStarts = append(w.out.XStarts, w.pos[id].Start)
		w.out.XStop = append(w.out.XStop, w.pos[id].Stop)
	}
	for _, id := range slices.Sorted(maps.Keys(w.typ)) {
		n, err := typeN(w.typ[id])
		if err != nil {
			return setAST{}, err
		}
		w.out.XTypeIDs = append(w.out.XTypeIDs, id)
		w.out.XTypeOf = append(w.out.XTypeOf, n)
	}
	refs := native.ReferenceMap()
	for _, id := range slices.Sorted(maps.Keys(refs)) {
		r := refs[id]
		n := refN(r)
		if r.Value == nil {
			w.out.RefIDs, w.out.RefOf = append(w.out.RefIDs, id), append(w.out.RefOf, n)
			continue
		}
		k, num, str, err := w.literal(r.Value)
		if err != nil {
			return setAST{}, err
		}
		w.out.ValueRefs = append(w.out.ValueRefs, setValueRef{ID: id, Ref: n, Kind: k, Num: num, Str: str})
	}
	w.out.Syntax, w.out.Location = strs.add(info.SyntaxVersion()), strs.add(info.Description())
	w.out.Lines = slices.Clone(info.LineOffsets())
	w.out.Ext = slices.Clone(info.Extensions())
	return w.out, nil
}

// node writes a node's kind, id, and its position and type if it has them.
func (w *astWriter) node(kind uint8, id int64) {
	if r, ok := w.pos[id]; ok {
		kind |= kindHasPos
		w.out.Starts, w.out.Stops = append(w.out.Starts, r.Start), append(w.out.Stops, r.Stop)
		delete(w.pos, id)
	}
	if t, ok := w.typ[id]; ok {
		n, err := w.typeN(t)
		if err != nil && w.err == nil {
			w.err = err
		}
		kind |= kindHasType
		w.out.TypeOf = append(w.out.TypeOf, n)
		delete(w.typ, id)
	}
	w.out.Kinds, w.out.IDs = append(w.out.Kinds, kind), append(w.out.IDs, id)
}

func (w *astWriter) str(s string) { w.out.Strs = append(w.out.Strs, w.strs.add(s)) }

func (w *astWriter) count(n int) {
	if n < 0 || n > math.MaxUint32 {
		w.err = errors.New("a list too long to record")
		return
	}
	w.out.Counts = append(w.out.Counts, uint32(n))
}

// literal is the kind and value of a literal.
func (w *astWriter) literal(v ref.Val) (kind uint8, num uint64, str uint32, err error) {
	switch v := v.(type) {
	case types.Null:
		return kindNull, 0, 0, nil
	case types.Bool:
		if v {
			return kindBool, 1, 0, nil
		}
		return kindBool, 0, 0, nil
	case types.Int:
		return kindInt, uint64(v), 0, nil
	case types.Uint:
		return kindUint, uint64(v), 0, nil
	case types.Double:
		return kindDouble, math.Float64bits(float64(v)), 0, nil
	case types.String:
		return kindString, 0, w.strs.add(string(v)), nil
	case types.Bytes:
		return kindBytes, 0, w.strs.add(string(v)), nil
	}
	return 0, 0, 0, errors.New("a literal the record cannot hold")
}

// expr writes the tree of e in preorder.
func (w *astWriter) expr(e celast.Expr) {
	if w.err != nil {
		return
	}
	switch e.Kind() {
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			w.node(kindMemberCall, e.ID())
		} else {
			w.node(kindCall, e.ID())
		}
		w.str(c.FunctionName())
		w.count(len(c.Args()))
		if c.IsMemberFunction() {
			w.expr(c.Target())
		}
		for _, a := range c.Args() {
			w.expr(a)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		w.node(kindComprehension, e.ID())
		w.str(c.IterVar())
		w.str(c.IterVar2())
		w.str(c.AccuVar())
		for _, x := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			w.expr(x)
		}
	case celast.IdentKind:
		w.node(kindIdent, e.ID())
		w.str(e.AsIdent())
	case celast.ListKind:
		l := e.AsList()
		w.node(kindList, e.ID())
		w.count(len(l.Elements()))
		w.count(len(l.OptionalIndices()))
		w.out.OptIdx = append(w.out.OptIdx, l.OptionalIndices()...)
		for _, x := range l.Elements() {
			w.expr(x)
		}
	case celast.LiteralKind:
		k, num, str, err := w.literal(e.AsLiteral())
		if err != nil {
			w.err = err
			return
		}
		w.node(k, e.ID())
		switch k {
		case kindBool, kindInt, kindUint, kindDouble:
			w.out.Nums = append(w.out.Nums, num)
		case kindString, kindBytes:
			w.out.Strs = append(w.out.Strs, str)
		}
	case celast.MapKind:
		m := e.AsMap()
		w.node(kindMap, e.ID())
		w.count(len(m.Entries()))
		for _, x := range m.Entries() {
			if x.Kind() != celast.MapEntryKind {
				w.err = errors.New("a map entry the record cannot hold")
				return
			}
			me := x.AsMapEntry()
			if me.IsOptional() {
				w.node(kindOptMapEntry, x.ID())
			} else {
				w.node(kindMapEntry, x.ID())
			}
			w.expr(me.Key())
			w.expr(me.Value())
		}
	case celast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			w.node(kindTest, e.ID())
		} else {
			w.node(kindSelect, e.ID())
		}
		w.str(s.FieldName())
		w.expr(s.Operand())
	case celast.StructKind:
		s := e.AsStruct()
		w.node(kindStruct, e.ID())
		w.str(s.TypeName())
		w.count(len(s.Fields()))
		for _, x := range s.Fields() {
			if x.Kind() != celast.StructFieldKind {
				w.err = errors.New("a struct field the record cannot hold")
				return
			}
			f := x.AsStructField()
			if f.IsOptional() {
				w.node(kindOptStructField, x.ID())
			} else {
				w.node(kindStructField, x.ID())
			}
			w.str(f.Name())
			w.expr(f.Value())
		}
	case celast.UnspecifiedExprKind:
		w.node(kindUnspecified, e.ID())
	default:
		w.err = errors.New("an expression the record cannot hold")
	}
}

// astReader builds the trees of a setAST.
type astReader struct {
	a    *setAST
	strs []string
	fac  celast.ExprFactory
	r    *replayState
	info *celast.SourceInfo
	ast  *celast.AST
	// lean builds the tree to plan (planAST): no offset ranges, and the
	// types into types.
	lean  bool
	types map[int64]*types.Type
	err   error
	k     int // the next node
	s     int // the next string operand
	c     int // the next count
	n     int // the next number
	o     int // the next optional index
	p     int // the next position
	t     int // the next type
}

// replayAST builds the checked expression a records; r's tables give its
// strings, types and references.
func (r *replayState) replayAST(a *setAST) (*cel.Ast, error) {
	if len(a.Kinds) == 0 || len(a.Kinds) != len(a.IDs) || len(a.Starts) != len(a.Stops) ||
		len(a.XPosIDs) != len(a.XStarts) || len(a.XPosIDs) != len(a.XStop) ||
		len(a.XTypeIDs) != len(a.XTypeOf) || len(a.RefIDs) != len(a.RefOf) {
		return nil, errReplayAST
	}
	syntax, ok1 := str(r.idx.Strings, a.Syntax)
	location, ok2 := str(r.idx.Strings, a.Location)
	if !ok1 || !ok2 {
		return nil, errReplayAST
	}
	// The shell: an AST of one node with the recorded source information,
	// which the recorded tree then fills (cel-go builds a cel.Ast only
	// from a protobuf or a parse).
	shell := &exprpb.CheckedExpr{
		Expr:       &exprpb.Expr{Id: a.IDs[0]},
		SourceInfo: &exprpb.SourceInfo{SyntaxVersion: syntax, Location: location, LineOffsets: a.Lines},
	}
	for _, e := range a.Ext {
		x := &exprpb.SourceInfo_Extension{Id: e.ID, Version: &exprpb.SourceInfo_Extension_Version{Major: e.Version.Major, Minor: e.Version.Minor}}
		for _, c := range e.Components {
			switch c {
			case celast.ComponentParser:
				x.AffectedComponents = append(x.AffectedComponents, exprpb.SourceInfo_Extension_COMPONENT_PARSER)
			case celast.ComponentTypeChecker:
				x.AffectedComponents = append(x.AffectedComponents, exprpb.SourceInfo_Extension_COMPONENT_TYPE_CHECKER)
			case celast.ComponentRuntime:
				x.AffectedComponents = append(x.AffectedComponents, exprpb.SourceInfo_Extension_COMPONENT_RUNTIME)
			default:
				return nil, errReplayAST
			}
		}
		shell.SourceInfo.Extensions = append(shell.SourceInfo.Extensions, x)
	}
	out, err := cel.CheckedExprToAstWithSource(shell, nil)
	if err != nil {
		return nil, errReplayAST
	}
	native := out.NativeRep()
	d := &astReader{a: a, strs: r.idx.Strings, fac: celast.NewExprFactory(), r: r, info: native.SourceInfo(), ast: native}
	root := d.expr(0)
	for _, id := range a.MacroIDs {
		m := d.expr(0)
		if d.err == nil {
			d.info.SetMacroCall(id, m)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.k != len(a.Kinds) || d.s != len(a.Strs) || d.c != len(a.Counts) || d.n != len(a.Nums) ||
		d.o != len(a.OptIdx) || d.p != len(a.Starts) || d.t != len(a.TypeOf) {
		return nil, errReplayAST
	}
	native.Expr().SetKindCase(root)
	for i, id := range a.XPosIDs {
		d.info.SetOffsetRange(id, celast.OffsetRange{Start: a.XStarts[i], Stop: a.XStop[i]})
	}
	for i, id := range a.XTypeIDs {
		d.setType(id, a.XTypeOf[i])
	}
	refs, err := d.references()
	if err != nil {
		return nil, err
	}
	for id, ref := range refs {
		native.SetReference(id, ref)
	}
	if !out.IsChecked() {
		return nil, errors.New("a recorded expression has no types")
	}
	return out, nil
}

// planAST builds the checked expression a records as a plan needs it
// (cel.Env.PlanProgram): its tree, types, references and source
// extensions, without the offset ranges and macro calls that only an
// explanation reads (replayAST builds those, at the first AST). Its maps
// are made at their size rather than grown one insert at a time. The
// columns are checked as replayAST checks them, but for the macro calls'
// trees, which follow the expression's and are not read.
func (r *replayState) planAST(a *setAST) (*celast.AST, error) {
	if len(a.Kinds) == 0 || len(a.Kinds) != len(a.IDs) || len(a.Starts) != len(a.Stops) ||
		len(a.XPosIDs) != len(a.XStarts) || len(a.XPosIDs) != len(a.XStop) ||
		len(a.XTypeIDs) != len(a.XTypeOf) || len(a.RefIDs) != len(a.RefOf) {
		return nil, errReplayAST
	}
	if _, ok := str(r.idx.Strings, a.Syntax); !ok {
		return nil, errReplayAST
	}
	if _, ok := str(r.idx.Strings, a.Location); !ok {
		return nil, errReplayAST
	}
	info := celast.NewSourceInfo(nil)
	for _, e := range a.Ext {
		for _, c := range e.Components {
			if c != celast.ComponentParser && c != celast.ComponentTypeChecker && c != celast.ComponentRuntime {
				return nil, errReplayAST
			}
		}
		info.AddExtension(celast.NewExtension(e.ID, e.Version, slices.Clone(e.Components)...))
	}
	d := &astReader{a: a, strs: r.idx.Strings, fac: celast.NewExprFactory(), r: r, lean: true,
		types: make(map[int64]*types.Type, len(a.TypeOf)+len(a.XTypeIDs))}
	root := d.expr(0)
	if d.err != nil {
		return nil, d.err
	}
	for i, id := range a.XTypeIDs {
		d.setType(id, a.XTypeOf[i])
	}
	refs, err := d.references()
	if err != nil {
		return nil, err
	}
	if len(d.types) == 0 {
		return nil, errors.New("a recorded expression has no types")
	}
	return celast.NewCheckedAST(celast.NewAST(root, info), d.types, refs), nil
}

// references are the references d's expression records (its RefIDs and
// ValueRefs), made at their size; an error when one is missing, given
// twice, or a value does not read.
func (d *astReader) references() (map[int64]*celast.ReferenceInfo, error) {
	a, r := d.a, d.r
	refs := make(map[int64]*celast.ReferenceInfo, len(a.RefIDs)+len(a.ValueRefs))
	for i, id := range a.RefIDs {
		ref, ok := r.ref(a.RefOf[i])
		if !ok {
			return nil, errors.New("a recorded reference is missing")
		}
		if _, dup := refs[id]; dup {
			return nil, errors.New("a recorded reference is given twice")
		}
		refs[id] = ref
	}
	for _, vr := range a.ValueRefs {
		ref, ok := r.ref(vr.Ref)
		if !ok {
			return nil, errors.New("a recorded reference is missing")
		}
		if _, dup := refs[vr.ID]; dup {
			return nil, errors.New("a recorded reference is given twice")
		}
		v, ok := d.value(vr.Kind, vr.Num, vr.Str)
		if !ok {
			return nil, errReplayAST
		}
		refs[vr.ID] = &celast.ReferenceInfo{Name: ref.Name, OverloadIDs: ref.OverloadIDs, Value: v}
	}
	if d.err != nil {
		return nil, d.err
	}
	return refs, nil
}

// str is strs[n], if there is one.
func str(strs []string, n uint32) (string, bool) {
	if int64(n) >= int64(len(strs)) {
		return "", false
	}
	return strs[n], true
}

func (d *astReader) fail() celast.Expr {
	if d.err == nil {
		d.err = errReplayAST
	}
	return nil
}

func (d *astReader) str() (string, bool) {
	if d.s >= len(d.a.Strs) {
		return "", false
	}
	d.s++
	return str(d.strs, d.a.Strs[d.s-1])
}

// count is the next count, at most the nodes left (every counted thing
// is at least one node), or max.
func (d *astReader) count(max int) (int, bool) {
	if d.c >= len(d.a.Counts) {
		return 0, false
	}
	d.c++
	n := d.a.Counts[d.c-1]
	if int64(n) > int64(max) {
		return 0, false
	}
	return int(n), true
}

func (d *astReader) num() (uint64, bool) {
	if d.n >= len(d.a.Nums) {
		return 0, false
	}
	d.n++
	return d.a.Nums[d.n-1], true
}

// setType gives id the index's type n.
func (d *astReader) setType(id int64, n uint32) {
	t, err := d.r.typ(n)
	if err != nil {
		if d.err == nil {
			d.err = err
		}
		return
	}
	if d.lean {
		d.types[id] = t
		return
	}
	d.ast.SetType(id, t)
}

// value is a literal of kind k.
func (d *astReader) value(k uint8, num uint64, s uint32) (ref.Val, bool) {
	switch k {
	case kindNull:
		return types.NullValue, true
	case kindBool:
		return types.Bool(num == 1), num <= 1
	case kindInt:
		return types.Int(int64(num)), true
	case kindUint:
		return types.Uint(num), true
	case kindDouble:
		return types.Double(math.Float64frombits(num)), true
	case kindString:
		v, ok := str(d.strs, s)
		return types.String(v), ok
	case kindBytes:
		v, ok := str(d.strs, s)
		return types.Bytes(v), ok
	}
	return nil, false
}

// head reads the next node's kind and id, and gives it its position and
// type.
func (d *astReader) head() (uint8, int64, bool) {
	if d.err != nil || d.k >= len(d.a.Kinds) {
		return 0, 0, false
	}
	k, id := d.a.Kinds[d.k], d.a.IDs[d.k]
	d.k++
	if k&kindHasPos != 0 {
		if d.p >= len(d.a.Starts) {
			return 0, 0, false
		}
		if !d.lean {
			d.info.SetOffsetRange(id, celast.OffsetRange{Start: d.a.Starts[d.p], Stop: d.a.Stops[d.p]})
		}
		d.p++
	}
	if k&kindHasType != 0 {
		if d.t >= len(d.a.TypeOf) {
			return 0, 0, false
		}
		d.setType(id, d.a.TypeOf[d.t])
		d.t++
	}
	return k & kindMask, id, true
}

// expr builds the next tree, at nesting depth.
func (d *astReader) expr(depth int) celast.Expr {
	if depth > maxReplayDepth {
		return d.fail()
	}
	k, id, ok := d.head()
	if !ok {
		return d.fail()
	}
	left := len(d.a.Kinds) - d.k
	switch k {
	case kindCall, kindMemberCall:
		fn, ok1 := d.str()
		n, ok2 := d.count(left)
		if !ok1 || !ok2 {
			return d.fail()
		}
		var target celast.Expr
		if k == kindMemberCall {
			target = d.expr(depth + 1)
		}
		args := make([]celast.Expr, n)
		for i := range args {
			args[i] = d.expr(depth + 1)
		}
		if d.err != nil {
			return nil
		}
		if k == kindMemberCall {
			return d.fac.NewMemberCall(id, fn, target, args...)
		}
		return d.fac.NewCall(id, fn, args...)
	case kindComprehension:
		iv, ok1 := d.str()
		iv2, ok2 := d.str()
		acc, ok3 := d.str()
		if !ok1 || !ok2 || !ok3 {
			return d.fail()
		}
		var x [5]celast.Expr
		for i := range x {
			x[i] = d.expr(depth + 1)
		}
		if d.err != nil {
			return nil
		}
		return d.fac.NewComprehensionTwoVar(id, x[0], iv, iv2, acc, x[1], x[2], x[3], x[4])
	case kindIdent:
		name, ok := d.str()
		if !ok {
			return d.fail()
		}
		return d.fac.NewIdent(id, name)
	case kindList:
		n, ok1 := d.count(left)
		m, ok2 := d.count(n)
		if !ok1 || !ok2 || d.o+m > len(d.a.OptIdx) {
			return d.fail()
		}
		var opt []int32
		if m > 0 {
			opt = d.a.OptIdx[d.o : d.o+m : d.o+m]
			d.o += m
			for _, i := range opt {
				if i < 0 || int(i) >= n {
					return d.fail()
				}
			}
		}
		elems := make([]celast.Expr, n)
		for i := range elems {
			elems[i] = d.expr(depth + 1)
		}
		if d.err != nil {
			return nil
		}
		return d.fac.NewList(id, elems, opt)
	case kindMap:
		n, ok := d.count(left)
		if !ok {
			return d.fail()
		}
		entries := make([]celast.EntryExpr, n)
		for i := range entries {
			ek, eid, ok := d.head()
			if !ok || (ek != kindMapEntry && ek != kindOptMapEntry) {
				return d.fail()
			}
			key := d.expr(depth + 1)
			val := d.expr(depth + 1)
			if d.err != nil {
				return nil
			}
			entries[i] = d.fac.NewMapEntry(eid, key, val, ek == kindOptMapEntry)
		}
		return d.fac.NewMap(id, entries)
	case kindSelect, kindTest:
		field, ok := d.str()
		if !ok {
			return d.fail()
		}
		operand := d.expr(depth + 1)
		if d.err != nil {
			return nil
		}
		if k == kindTest {
			return d.fac.NewPresenceTest(id, operand, field)
		}
		return d.fac.NewSelect(id, operand, field)
	case kindStruct:
		name, ok1 := d.str()
		n, ok2 := d.count(left)
		if !ok1 || !ok2 {
			return d.fail()
		}
		fields := make([]celast.EntryExpr, n)
		for i := range fields {
			fk, fid, ok := d.head()
			if !ok || (fk != kindStructField && fk != kindOptStructField) {
				return d.fail()
			}
			fname, ok := d.str()
			if !ok {
				return d.fail()
			}
			val := d.expr(depth + 1)
			if d.err != nil {
				return nil
			}
			fields[i] = d.fac.NewStructField(fid, fname, val, fk == kindOptStructField)
		}
		return d.fac.NewStruct(id, name, fields)
	case kindUnspecified:
		return d.fac.NewUnspecifiedExpr(id)
	case kindNull, kindBool, kindInt, kindUint, kindDouble, kindString, kindBytes:
		var num uint64
		var s uint32
		switch k {
		case kindBool, kindInt, kindUint, kindDouble:
			if num, ok = d.num(); !ok {
				return d.fail()
			}
		case kindString, kindBytes:
			if d.s >= len(d.a.Strs) {
				return d.fail()
			}
			s = d.a.Strs[d.s]
			d.s++
		}
		v, ok := d.value(k, num, s)
		if !ok {
			return d.fail()
		}
		return d.fac.NewLiteral(id, v)
	}
	return d.fail()
}
