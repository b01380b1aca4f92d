package eval

import (
	"errors"
	"fmt"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/celguard/celguard/stdlib"
)

// toNative converts a CEL value to the JSON data model (nil, bool, int64,
// uint64, float64, string, []any, map[string]any), so rewritten arguments
// stay JSON for the host.
func toNative(v ref.Val, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("value nested more than 64 levels deep")
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return []byte(x), nil
	case types.Duration:
		return x.Duration.String(), nil
	case types.Timestamp:
		return x.Time, nil
	case *types.Err:
		return nil, x
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, err := stdlib.KeyString(k)
			if err != nil {
				return nil, err
			}
			val, err := toNative(x.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = val
		}
		return out, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			val, err := toNative(x.Get(i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	}
	if v == nil {
		return nil, nil
	}
	return nil, fmt.Errorf("value of type %s cannot be an argument", v.Type())
}
