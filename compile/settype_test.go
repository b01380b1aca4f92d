package compile

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"testing"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

	"github.com/celguard/celguard/policies"
)

// everyForm are types of every form of the record's type table.
var everyForm = []*types.Type{
	types.DynType, types.NullType, types.ErrorType, types.AnyType,
	types.BoolType, types.BytesType, types.DoubleType, types.IntType, types.StringType, types.UintType,
	types.NewNullableType(types.BoolType), types.NewNullableType(types.IntType), types.NewNullableType(types.StringType),
	types.NewNullableType(types.DoubleType), types.NewNullableType(types.UintType), types.NewNullableType(types.BytesType),
	types.DurationType, types.TimestampType,
	types.NewListType(types.StringType), types.NewListType(types.NewListType(types.DynType)),
	types.NewMapType(types.StringType, types.DynType), types.NewMapType(types.IntType, types.NewListType(types.NewTypeParamType("V"))),
	types.NewObjectType("google.api.expr.v1alpha1.Expr"), types.NewTypeParamType("T"),
	types.TypeType, types.NewTypeTypeWithParam(types.IntType), types.NewTypeTypeWithParam(types.NewTypeParamType("T")),
	types.NewOptionalType(types.StringType), types.NewOptionalType(types.NewMapType(types.StringType, types.IntType)),
	types.NewOpaqueType("vector", types.DoubleType, types.NewListType(types.UintType)), types.NewOpaqueType("handle"),
}

// viaProtobuf is the type the replay made from the protobuf form before
// the table was written without it (celguard-set-6 and before).
func viaProtobuf(t *types.Type) (*types.Type, error) {
	pt, err := types.TypeToExprType(t)
	if err != nil {
		return nil, err
	}
	tb, err := proto.MarshalOptions{Deterministic: true}.Marshal(pt)
	if err != nil {
		return nil, err
	}
	var back exprpb.Type
	if err := proto.Unmarshal(tb, &back); err != nil {
		return nil, err
	}
	return types.ExprTypeToType(&back)
}

// allTraits are cel-go's traits.
var allTraits = []int{traits.AdderType, traits.ComparerType, traits.ContainerType, traits.DividerType,
	traits.FieldTesterType, traits.IndexerType, traits.IterableType, traits.IteratorType, traits.MatcherType,
	traits.ModderType, traits.MultiplierType, traits.NegatorType, traits.ReceiverType, traits.SizerType,
	traits.SubtractorType, traits.FoldableType}

// probeValues are values whose runtime types the compared types are asked
// about.
var probeValues = []ref.Val{types.Int(1), types.Uint(1), types.Double(1), types.String("s"), types.Bytes("b"),
	types.Bool(true), types.NullValue, types.IntType, types.NewStringList(types.DefaultTypeAdapter, []string{"a"})}

// sameType asserts that got behaves as want: the same protobuf form,
// name, kind, traits and parameters, and the same answers to every
// assignability question about the types of everyForm and probeValues.
func sameType(t *testing.T, want, got *types.Type, msg string) {
	t.Helper()
	require.NotNil(t, got, msg)
	wp, err := types.TypeToExprType(want)
	require.NoError(t, err, msg)
	gp, err := types.TypeToExprType(got)
	require.NoError(t, err, msg)
	assert.True(t, proto.Equal(wp, gp), "%s: %v is %v", msg, gp, wp)
	assert.Equal(t, want.String(), got.String(), msg)
	assert.Equal(t, want.Kind(), got.Kind(), msg)
	assert.Equal(t, want.TypeName(), got.TypeName(), msg)
	assert.True(t, want.IsExactType(got), msg)
	for _, tr := range allTraits {
		assert.Equal(t, want.HasTrait(tr), got.HasTrait(tr), "%s: trait %d", msg, tr)
	}
	for _, p := range everyForm {
		assert.Equal(t, want.IsAssignableType(p), got.IsAssignableType(p), "%s: %v assignable to it", msg, p)
		assert.Equal(t, p.IsAssignableType(want), p.IsAssignableType(got), "%s: it assignable to %v", msg, p)
	}
	for _, v := range probeValues {
		assert.Equal(t, want.IsAssignableRuntimeType(v), got.IsAssignableRuntimeType(v), "%s: %v of it", msg, v)
	}
	assert.Equal(t, want.DeclaredTypeName(), got.DeclaredTypeName(), msg)
	assert.Equal(t, want.IsDyn(), got.IsDyn(), msg)
	require.Equal(t, len(want.Parameters()), len(got.Parameters()), msg)
	for i := range want.Parameters() {
		sameType(t, want.Parameters()[i], got.Parameters()[i], fmt.Sprintf("%s, parameter %d", msg, i))
	}
}

// throughTable writes ts in a type table, through gob as the record
// holds it, and reads the table back.
func throughTable(t *testing.T, ts []*types.Type) []*types.Type {
	t.Helper()
	s := &setTypes{}
	ns := make([]uint32, len(ts))
	for i, typ := range ts {
		n, err := s.add(typ)
		require.NoError(t, err, typ.String())
		ns[i] = n
	}
	var buf bytes.Buffer
	require.NoError(t, gob.NewEncoder(&buf).Encode(s.list))
	var back []setType
	require.NoError(t, gob.NewDecoder(&buf).Decode(&back))
	made := readTypes(back)
	out := make([]*types.Type, len(ts))
	for i, n := range ns {
		out[i] = made[n]
	}
	return out
}

// Every form comes back from the table as the protobuf form made it.
func TestSetTypesEveryForm(t *testing.T) {
	got := throughTable(t, everyForm)
	for i, typ := range everyForm {
		want, err := viaProtobuf(typ)
		require.NoError(t, err, typ.String())
		sameType(t, want, got[i], typ.String())
	}
}

// Every type of every expression of the built-in policies comes back from
// the table as the protobuf form made it.
func TestSetTypesBuiltins(t *testing.T) {
	srcs, err := policies.Sources()
	require.NoError(t, err)
	set, err := Compile(srcs)
	require.NoError(t, err)
	seen := map[string]*types.Type{}
	for _, p := range programsByPos(set) {
		for _, typ := range p.AST().NativeRep().TypeMap() {
			seen[typ.String()] = typ
		}
	}
	for _, pol := range set.Policies() {
		for _, v := range pol.Variables {
			seen[v.Type.String()] = v.Type
		}
	}
	require.Greater(t, len(seen), 10)
	var all []*types.Type
	for _, typ := range seen {
		all = append(all, typ)
	}
	got := throughTable(t, all)
	for i, typ := range all {
		want, err := viaProtobuf(typ)
		require.NoError(t, err, typ.String())
		sameType(t, want, got[i], typ.String())
	}
}

// A table entry that is not a type the protobuf form could hold, or whose
// parameters are not earlier entries, does not decode, nor does any type
// that has it as a parameter; the others do.
func TestSetTypesRefused(t *testing.T) {
	str := setType{Op: typePrimitive, Prim: int32(exprpb.Type_STRING)}
	cases := map[string]setType{
		"an unknown form":               {Op: 0xff},
		"no form":                       {},
		"a primitive unspecified":       {Op: typePrimitive},
		"a primitive past the enum":     {Op: typePrimitive, Prim: 99},
		"a wrapper of nothing":          {Op: typeWrapper},
		"a well-known type unspecified": {Op: typeWellKnown},
		"a list without its element":    {Op: typeList},
		"a list of two":                 {Op: typeList, Params: []uint32{0, 0}},
		"a map of one":                  {Op: typeMap, Params: []uint32{0}},
		"a type of two":                 {Op: typeType, Params: []uint32{0, 0}},
		"a parameter of itself":         {Op: typeList, Params: []uint32{1}},
		"a parameter after it":          {Op: typeList, Params: []uint32{2}},
		"a name on a primitive":         {Op: typePrimitive, Prim: int32(exprpb.Type_STRING), Name: "x"},
		"a primitive on a list":         {Op: typeList, Prim: 1, Params: []uint32{0}},
		"a name not UTF-8":              {Op: typeMessage, Name: "a\xffb"},
		"an opaque name not UTF-8":      {Op: typeAbstract, Name: "\xc0"},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			made := readTypes([]setType{str, bad, {Op: typeList, Params: []uint32{1}}, {Op: typeMap, Params: []uint32{0, 0}}})
			assert.Equal(t, types.StringType, made[0])
			assert.Nil(t, made[1], "refused")
			assert.Nil(t, made[2], "a type of a refused one is refused")
			assert.NotNil(t, made[3])
		})
	}
}

// A table whose shared parameters make a type of more than maxTypeNodes
// nodes does not decode it: each map below doubles the tree.
func TestSetTypesSize(t *testing.T) {
	list := []setType{{Op: typeDyn}}
	for i := range 14 {
		list = append(list, setType{Op: typeMap, Params: []uint32{uint32(i), uint32(i)}})
	}
	made := readTypes(list)
	assert.NotNil(t, made[11], "2^12-1 nodes")
	assert.Nil(t, made[12], "2^13-1 nodes")
	assert.Nil(t, made[14])
}

// A type nested past maxTypeDepth is not recorded, and a table nesting
// deeper does not decode.
func TestSetTypesDepth(t *testing.T) {
	deep := types.StringType
	for range maxTypeDepth {
		deep = types.NewListType(deep)
	}
	got := throughTable(t, []*types.Type{deep})
	sameType(t, deep, got[0], "as deep as recorded")
	_, err := (&setTypes{}).add(types.NewListType(deep))
	assert.Error(t, err)

	list := []setType{{Op: typeDyn}}
	for i := range maxTypeDepth + 1 {
		list = append(list, setType{Op: typeList, Params: []uint32{uint32(i)}})
	}
	made := readTypes(list)
	assert.NotNil(t, made[maxTypeDepth])
	assert.Nil(t, made[maxTypeDepth+1])
}

// FuzzSetTypes reads tables made of arbitrary entries: reading never
// panics, and every type it makes is the one the protobuf form of that
// type makes (the replay's path before), and is recorded and read back as
// itself.
func FuzzSetTypes(f *testing.F) {
	s := &setTypes{}
	for _, typ := range everyForm {
		_, err := s.add(typ)
		require.NoError(f, err)
	}
	var seed bytes.Buffer
	for _, st := range s.list {
		seed.WriteByte(st.Op)
		seed.WriteByte(byte(st.Prim))
		seed.WriteByte(byte(len(st.Name)))
		seed.WriteString(st.Name)
		seed.WriteByte(byte(len(st.Params)))
		for _, p := range st.Params {
			seed.WriteByte(byte(p))
		}
	}
	f.Add(seed.Bytes())
	f.Add([]byte{typeList, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var list []setType
		next := func() int {
			if len(data) == 0 {
				return -1
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		for len(data) > 0 && len(list) < 64 {
			st := setType{Op: uint8(next())}
			st.Prim = int32(max(next(), 0))
			if n := next(); n > 0 {
				n = min(n%16, len(data))
				st.Name, data = string(data[:n]), data[n:]
			}
			for range max(next(), 0) % 4 {
				st.Params = append(st.Params, uint32(max(next(), 0)))
			}
			list = append(list, st)
		}
		made := readTypes(list)
		for i, typ := range made {
			if typ == nil || len(typ.String()) > 400 {
				// sameType walks a type once per node for each of its
				// probes: a big one is left to TestSetTypesSize.
				continue
			}
			want, err := viaProtobuf(typ)
			require.NoError(t, err, "entry %d: %v", i, typ)
			sameType(t, want, typ, typ.String())
			sameType(t, typ, throughTable(t, []*types.Type{typ})[0], typ.String())
		}
	})
}
