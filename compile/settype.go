package compile

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// setType is one type of a record's type table (setIndex.Types): the
// canonical protobuf form cel-go gives the type (types.TypeToExprType),
// written without protobuf, so that a replay makes its types with cel-go's
// constructors, exactly as types.ExprTypeToType would from that form
// (replayState.typ), without unmarshalling protobuf messages (whose lazy
// descriptor set-up and double conversion, through cel.dev/expr, were
// about 2.6% of a first in-process call's CPU).
//
// Op is the form's kind (the typeOp constants); Name the name of an
// abstract, message or type-parameter type; Prim the primitive of a
// primitive or wrapper type, or the well-known type of a well-known type
// (their protobuf enum values); Params the parameters, as indexes of
// types before this one in the table, so that the table has no cycles and
// is read in one pass.
type setType struct {
	Op     uint8
	Prim   int32
	Name   string
	Params []uint32
}

// The forms of a setType, one per case of exprpb.Type's type_kind that
// types.ExprTypeToType accepts (a function type it refuses is never
// recorded).
const (
	typeDyn uint8 = iota + 1
	typeNull
	typePrimitive
	typeWrapper
	typeWellKnown
	typeList
	typeMap
	typeMessage
	typeParam
	typeType
	typeError
	typeAbstract
)

// errRecordedType is the error of a recorded type that does not decode.
var errRecordedType = errors.New("a recorded type does not decode")

// setTypes builds a record's type table: the index of each distinct type,
// its parameters first.
type setTypes struct {
	list []setType
	of   map[string]uint32
	ptr  map[*types.Type]uint32
}

// add returns the index of t in the table, adding it (and its parameters)
// when it is not there.
func (s *setTypes) add(t *types.Type) (uint32, error) {
	if n, ok := s.ptr[t]; ok {
		return n, nil
	}
	pt, err := types.TypeToExprType(t)
	if err != nil {
		return 0, err
	}
	n, err := s.addProto(pt, 0)
	if err != nil {
		return 0, err
	}
	if s.ptr == nil {
		s.ptr = map[*types.Type]uint32{}
	}
	s.ptr[t] = n
	return n, nil
}

// maxTypeDepth bounds the nesting of a recorded type (a list of lists ...):
// past it the set is not recorded, and a table whose types nest deeper
// does not decode (readTypes).
const maxTypeDepth = 64

// addProto adds the type of the protobuf form pt, depth deep in another.
func (s *setTypes) addProto(pt *exprpb.Type, depth int) (uint32, error) {
	if depth > maxTypeDepth {
		return 0, errors.New("a type nests too deep to record")
	}
	var st setType
	param := func(p *exprpb.Type) error {
		n, err := s.addProto(p, depth+1)
		st.Params = append(st.Params, n)
		return err
	}
	var err error
	switch k := pt.GetTypeKind().(type) {
	case *exprpb.Type_Dyn:
		st.Op = typeDyn
	case *exprpb.Type_Null:
		st.Op = typeNull
	case *exprpb.Type_Primitive:
		st.Op, st.Prim = typePrimitive, int32(k.Primitive)
	case *exprpb.Type_Wrapper:
		st.Op, st.Prim = typeWrapper, int32(k.Wrapper)
	case *exprpb.Type_WellKnown:
		st.Op, st.Prim = typeWellKnown, int32(k.WellKnown)
	case *exprpb.Type_ListType_:
		st.Op = typeList
		err = param(k.ListType.GetElemType())
	case *exprpb.Type_MapType_:
		st.Op = typeMap
		if err = param(k.MapType.GetKeyType()); err == nil {
			err = param(k.MapType.GetValueType())
		}
	case *exprpb.Type_MessageType:
		st.Op, st.Name = typeMessage, k.MessageType
	case *exprpb.Type_TypeParam:
		st.Op, st.Name = typeParam, k.TypeParam
	case *exprpb.Type_Type:
		st.Op = typeType
		if k.Type.GetTypeKind() != nil {
			err = param(k.Type)
		}
	case *exprpb.Type_Error:
		st.Op = typeError
	case *exprpb.Type_AbstractType_:
		st.Op, st.Name = typeAbstract, k.AbstractType.GetName()
		for _, p := range k.AbstractType.GetParameterTypes() {
			if err = param(p); err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("a type cel-go does not convert back: %v", pt)
	}
	if err != nil {
		return 0, err
	}
	key := fmt.Sprintf("%d\x00%d\x00%s\x00%v", st.Op, st.Prim, st.Name, st.Params)
	if n, ok := s.of[key]; ok {
		return n, nil
	}
	if s.of == nil {
		s.of = map[string]uint32{}
	}
	n := uint32(len(s.list))
	s.of[key] = n
	s.list = append(s.list, st)
	return n, nil
}

// maxTypeNodes bounds the size of a recorded type, counted as a tree:
// parameters are shared entries, so a table of n entries could otherwise
// name a type of 2^n nodes, which cel-go walks whole (its String, its
// assignability).
const maxTypeNodes = 4096

// readTypes makes the types of the table, in order: made[i] is nil when
// type i does not decode (an unknown form, a parameter that is not an
// earlier type or does not decode, parameters the form does not take, a
// nesting past maxTypeDepth, more than maxTypeNodes nodes). It makes each
// type as types.ExprTypeToType makes it from the protobuf form (its
// ProtoAsType, case by case).
func readTypes(list []setType) []*types.Type {
	made := make([]*types.Type, len(list))
	depth := make([]int, len(list))
	nodes := make([]int, len(list))
	for i, st := range list {
		params := make([]*types.Type, len(st.Params))
		ok := true
		nodes[i] = 1
		for j, p := range st.Params {
			if p >= uint32(i) || made[p] == nil || depth[p] >= maxTypeDepth || nodes[i]+nodes[p] > maxTypeNodes {
				ok = false
				break
			}
			params[j] = made[p]
			depth[i] = max(depth[i], depth[p]+1)
			nodes[i] += nodes[p]
		}
		if ok {
			made[i] = makeType(st, params)
		}
	}
	return made
}

// makeType is the type of st with its parameters made; nil when st is not
// a type types.ExprTypeToType makes.
func makeType(st setType, params []*types.Type) *types.Type {
	if !utf8.ValidString(st.Name) {
		// A protobuf string is valid UTF-8: the protobuf form's decode
		// refused such a name.
		return nil
	}
	arity := func(n int) bool { return len(params) == n }
	switch st.Op {
	case typeDyn:
		if arity(0) && st.Prim == 0 && st.Name == "" {
			return types.DynType
		}
	case typeNull:
		if arity(0) && st.Prim == 0 && st.Name == "" {
			return types.NullType
		}
	case typePrimitive:
		if arity(0) && st.Name == "" {
			return primitiveType(exprpb.Type_PrimitiveType(st.Prim))
		}
	case typeWrapper:
		if arity(0) && st.Name == "" {
			if t := primitiveType(exprpb.Type_PrimitiveType(st.Prim)); t != nil {
				return types.NewNullableType(t)
			}
		}
	case typeWellKnown:
		if arity(0) && st.Name == "" {
			switch exprpb.Type_WellKnownType(st.Prim) {
			case exprpb.Type_ANY:
				return types.AnyType
			case exprpb.Type_DURATION:
				return types.DurationType
			case exprpb.Type_TIMESTAMP:
				return types.TimestampType
			}
		}
	case typeList:
		if arity(1) && st.Prim == 0 && st.Name == "" {
			return types.NewListType(params[0])
		}
	case typeMap:
		if arity(2) && st.Prim == 0 && st.Name == "" {
			return types.NewMapType(params[0], params[1])
		}
	case typeMessage:
		if arity(0) && st.Prim == 0 {
			return types.NewObjectType(st.Name)
		}
	case typeParam:
		if arity(0) && st.Prim == 0 {
			return types.NewTypeParamType(st.Name)
		}
	case typeType:
		if st.Prim == 0 && st.Name == "" {
			switch len(params) {
			case 0:
				return types.TypeType
			case 1:
				return types.NewTypeTypeWithParam(params[0])
			}
		}
	case typeError:
		if arity(0) && st.Prim == 0 && st.Name == "" {
			return types.ErrorType
		}
	case typeAbstract:
		if st.Prim == 0 {
			return types.NewOpaqueType(st.Name, params...)
		}
	}
	return nil
}

// primitiveType is the type of a primitive, nil for one types.ExprTypeToType
// refuses.
func primitiveType(p exprpb.Type_PrimitiveType) *types.Type {
	switch p {
	case exprpb.Type_BOOL:
		return types.BoolType
	case exprpb.Type_BYTES:
		return types.BytesType
	case exprpb.Type_DOUBLE:
		return types.DoubleType
	case exprpb.Type_INT64:
		return types.IntType
	case exprpb.Type_STRING:
		return types.StringType
	case exprpb.Type_UINT64:
		return types.UintType
	}
	return nil
}
