package stdlib

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// maxCanonicalDepth bounds the nesting Canonical follows, so a cyclic Go value
// becomes an error instead of a stack overflow.
const maxCanonicalDepth = 64

// Canonical returns the canonical JSON form of a CEL value: object keys sorted,
// no insignificant white space, and numbers in one spelling, so that two values
// that are equal as data always yield the same string whatever their key order.
//
// The mapping is JSON with these choices: a double with an integral value of
// magnitude below 2^53 is written as an integer (1.0 and 1 are the same key, as
// they are for a JSON decoder); NaN and the infinities are the strings "NaN",
// "Infinity" and "-Infinity"; bytes are base64 strings; timestamps are RFC 3339
// strings in UTC; durations are strings such as "1.5s"; map keys that are not
// strings are written in their decimal or boolean spelling. Keys sort by
// Unicode code point, and strings are escaped as little as JSON allows (see
// appendString), so for strings, booleans, null, integers and most non-integral
// doubles the result is byte for byte Python's json.dumps(v, sort_keys=True,
// separators=(",", ":"), ensure_ascii=False). Doubles differ where Python
// spells them its own way: 1.0 is "1" here, and a non-integral double of
// magnitude 1e6 or more is written in exponent form.
func Canonical(v ref.Val) (string, error) {
	bp := canonicalBufs.Get().(*[]byte)
	defer putCanonicalBuf(bp)
	b, err := appendCanonical((*bp)[:0], v, 0)
	*bp = b
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// canonicalBufs are the buffers Canonical and CanonicalNative write into
// before the one copy that is their string.
var canonicalBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledCanonical bounds the buffers canonicalBufs keeps, so that one
// large value does not keep its space.
const maxPooledCanonical = 64 << 10

func putCanonicalBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledCanonical {
		canonicalBufs.Put(bp)
	}
}

// CanonicalNative is Canonical for a Go value (for example tool-call arguments
// decoded from JSON), converted with cel-go's default type adapter.
//
// A value made only of what a JSON decoder produces (nil, bool, float64,
// string, []any and map[string]any: tool-call arguments) is written
// directly, without converting it to CEL values first; the bytes are the
// same (TestCanonicalNativeDifferential, FuzzCanonicalNative).
func CanonicalNative(v any) (string, error) {
	bp := canonicalBufs.Get().(*[]byte)
	defer putCanonicalBuf(bp)
	b, ok, err := appendNative((*bp)[:0], v, 0)
	*bp = b
	if ok {
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return canonicalAdapted(v)
}

// AppendCanonicalNative appends CanonicalNative(v) to dst: the same bytes,
// without making a string of them (a digest of the canonical form needs
// only the bytes). On an error dst is returned as it was.
func AppendCanonicalNative(dst []byte, v any) ([]byte, error) {
	b, ok, err := appendNative(dst, v, 0)
	if ok {
		if err != nil {
			return dst, err
		}
		return b, nil
	}
	s, err := canonicalAdapted(v)
	if err != nil {
		return dst, err
	}
	return append(dst, s...), nil
}

// canonicalAdapted is CanonicalNative through cel-go's default type
// adapter, for every Go value it converts.
func canonicalAdapted(v any) (string, error) {
	val := types.DefaultTypeAdapter.NativeToValue(v)
	if types.IsError(val) {
		return "", fmt.Errorf("canonical: %v", val)
	}
	return Canonical(val)
}

func appendCanonical(b []byte, v ref.Val, depth int) ([]byte, error) {
	if depth > maxCanonicalDepth {
		return b, errors.New("canonical: value nested more than 64 levels deep")
	}
	switch x := v.(type) {
	case types.Null:
		b = append(b, "null"...)
	case types.Bool:
		b = strconv.AppendBool(b, bool(x))
	case types.Int:
		b = strconv.AppendInt(b, int64(x), 10)
	case types.Uint:
		b = strconv.AppendUint(b, uint64(x), 10)
	case types.Double:
		b = appendDouble(b, float64(x))
	case types.String:
		b = appendString(b, string(x))
	case types.Bytes:
		b = appendString(b, base64.StdEncoding.EncodeToString([]byte(x)))
	case types.Timestamp:
		b = appendString(b, x.Time.UTC().Format(time.RFC3339Nano))
	case types.Duration:
		b = appendString(b, x.Duration.String())
	case *types.Err:
		return b, fmt.Errorf("canonical: %v", x)
	case traits.Mapper:
		return appendMap(b, x, depth)
	case traits.Lister:
		b = append(b, '[')
		n, ok := x.Size().(types.Int)
		if !ok {
			return b, errors.New("canonical: list without a size")
		}
		for i := types.Int(0); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, x.Get(i), depth+1); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	default:
		if v == nil {
			return append(b, "null"...), nil
		}
		return b, fmt.Errorf("canonical: unsupported value of type %s", v.Type())
	}
	return b, nil
}

// appendNative appends the canonical form of v as appendCanonical appends
// the CEL value cel-go's default type adapter makes of it, when v holds
// only nil, bool, float64, string, []any and map[string]any; ok is false,
// and what it appended past len(b) is to be discarded, when it holds
// anything else. err is appendCanonical's error for the same value (only
// nesting can fail).
func appendNative(b []byte, v any, depth int) (_ []byte, ok bool, err error) {
	if depth > maxCanonicalDepth {
		return b, true, errors.New("canonical: value nested more than 64 levels deep")
	}
	switch x := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		b = strconv.AppendBool(b, x)
	case float64:
		b = appendDouble(b, x)
	case string:
		b = appendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok, err = appendNative(b, e, depth+1); !ok || err != nil {
				return b, ok, err
			}
		}
		b = append(b, ']')
	case map[string]any:
		var small [8]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, ok, err = appendNative(b, x[k], depth+1); !ok || err != nil {
				return b, ok, err
			}
		}
		b = append(b, '}')
	default:
		return b, false, nil
	}
	return b, true, nil
}

func appendMap(b []byte, m traits.Mapper, depth int) ([]byte, error) {
	type entry struct {
		key string
		val ref.Val
	}
	var entries []entry
	it := m.Iterator()
	for it.HasNext() == types.True {
		k := it.Next()
		ks, err := KeyString(k)
		if err != nil {
			return b, fmt.Errorf("canonical: %w", err)
		}
		entries = append(entries, entry{ks, m.Get(k)})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e.key)
		b = append(b, ':')
		var err error
		if b, err = appendCanonical(b, e.val, depth+1); err != nil {
			return b, err
		}
	}
	b = append(b, '}')
	return b, nil
}

// KeyString is the JSON object key of a CEL map key: a string as it is, an
// integer in decimal, a boolean as true or false. Other key types are an
// error.
func KeyString(k ref.Val) (string, error) {
	switch kv := k.(type) {
	case types.String:
		return string(kv), nil
	case types.Int:
		return strconv.FormatInt(int64(kv), 10), nil
	case types.Uint:
		return strconv.FormatUint(uint64(kv), 10), nil
	case types.Bool:
		return strconv.FormatBool(bool(kv)), nil
	}
	return "", fmt.Errorf("unsupported map key of type %s", k.Type())
}

func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return strconv.AppendInt(b, int64(f), 10)
	default:
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
}

// canonicalPlain says which bytes appendString writes as they are without
// looking further: ASCII other than the control characters, '"' and '\\'.
var canonicalPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string the way the sorted-key JSON of other
// systems spells it (Python's json.dumps with ensure_ascii=False, RFC 8785):
// only '"', '\\' and the control characters below U+0020 are escaped, with
// the short escapes \b \f \n \r \t where JSON has them and \u00xx
// otherwise. '&', '<', '>', U+2028 and U+2029 are written as they are
// (encoding/json would escape them for HTML, so a regex over a canonical form
// that mentions them would never match). Invalid UTF-8 is written as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = slices.Grow(b, len(s)+2)
	b = append(b, '"')
	// Runs of bytes written as they are go in one write: results and file
	// contents are mostly such runs, and a write per byte was most of the
	// cost of hashing a tool's result (loop detection does, per call).
	plain := 0
	for i := 0; i < len(s); {
		for i < len(s) && canonicalPlain[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[plain:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, `\u00`...)
				b = append(b, hex[c>>4], hex[c&0xf])
			}
			i++
			plain = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[plain:i]...)
			b = utf8.AppendRune(b, utf8.RuneError)
			i++
			plain = i
			continue
		}
		i += size
	}
	b = append(b, s[plain:]...)
	return append(b, '"')
}

// CanonicalLib returns the library that declares canonical.
//
// # canonical
//
// Returns the canonical JSON form of any value: sorted keys, one spelling per
// number, no white space. Argument order in a map never changes the result, so
// it is the building block of counter keys and fingerprints.
//
//	canonical(<dyn>) -> <string>
//
// Examples:
//
//	canonical({"b": 1, "a": [true, null]}) // '{"a":[true,null],"b":1}'
//	canonical(1.0) == canonical(1)          // true
//
// Introduced in stdlib version 1.
func CanonicalLib() cel.EnvOption { return cel.Lib(canonicalLib{}) }

type canonicalLib struct{}

// LibraryName implements cel.SingletonLibrary.
func (canonicalLib) LibraryName() string { return "celguard.lib.canonical" }

// CompileOptions implements cel.Library.
func (canonicalLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("canonical",
			cel.Overload("canonical_dyn", []*cel.Type{cel.DynType}, cel.StringType,
				cel.UnaryBinding(func(v ref.Val) ref.Val {
					s, err := Canonical(v)
					if err != nil {
						return types.NewErr("%v", err)
					}
					return types.String(s)
				}))),
	}
}

// ProgramOptions implements cel.Library.
func (canonicalLib) ProgramOptions() []cel.ProgramOption { return nil }
