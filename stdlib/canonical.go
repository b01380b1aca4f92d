package stdlib

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
// writeString), so for strings, booleans, null, integers and most non-integral
// doubles the result is byte for byte Python's json.dumps(v, sort_keys=True,
// separators=(",", ":"), ensure_ascii=False). Doubles differ where Python
// spells them its own way: 1.0 is "1" here, and a non-integral double of
// magnitude 1e6 or more is written in exponent form.
func Canonical(v ref.Val) (string, error) {
	var b strings.Builder
	if err := writeCanonical(&b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// CanonicalNative is Canonical for a Go value (for example tool-call arguments
// decoded from JSON), converted with cel-go's default type adapter.
//
// A value made only of what a JSON decoder produces (nil, bool, float64,
// string, []any and map[string]any: tool-call arguments) is written
// directly, without converting it to CEL values first; the bytes are the
// same (TestCanonicalNativeDifferential, FuzzCanonicalNative).
func CanonicalNative(v any) (string, error) {
	var b strings.Builder
	if ok, err := writeNative(&b, v, 0); ok {
		if err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return canonicalAdapted(v)
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

func writeCanonical(b *strings.Builder, v ref.Val, depth int) error {
	if depth > maxCanonicalDepth {
		return errors.New("canonical: value nested more than 64 levels deep")
	}
	switch x := v.(type) {
	case types.Null:
		b.WriteString("null")
	case types.Bool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case types.Int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case types.Uint:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case types.Double:
		writeDouble(b, float64(x))
	case types.String:
		writeString(b, string(x))
	case types.Bytes:
		writeString(b, base64.StdEncoding.EncodeToString([]byte(x)))
	case types.Timestamp:
		writeString(b, x.Time.UTC().Format(time.RFC3339Nano))
	case types.Duration:
		writeString(b, x.Duration.String())
	case *types.Err:
		return fmt.Errorf("canonical: %v", x)
	case traits.Mapper:
		return writeMap(b, x, depth)
	case traits.Lister:
		b.WriteByte('[')
		n, ok := x.Size().(types.Int)
		if !ok {
			return errors.New("canonical: list without a size")
		}
		for i := types.Int(0); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, x.Get(i), depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		if v == nil {
			b.WriteString("null")
			return nil
		}
		return fmt.Errorf("canonical: unsupported value of type %s", v.Type())
	}
	return nil
}

// writeNative writes the canonical form of v as writeCanonical writes the
// CEL value cel-go's default type adapter makes of it, when v holds only
// nil, bool, float64, string, []any and map[string]any; ok is false, and
// what b holds is to be discarded, when it holds anything else. err is
// writeCanonical's error for the same value (only nesting can fail).
func writeNative(b *strings.Builder, v any, depth int) (ok bool, err error) {
	if depth > maxCanonicalDepth {
		return true, errors.New("canonical: value nested more than 64 levels deep")
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		writeDouble(b, x)
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if ok, err := writeNative(b, e, depth+1); !ok || err != nil {
				return ok, err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		var small [8]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if ok, err := writeNative(b, x[k], depth+1); !ok || err != nil {
				return ok, err
			}
		}
		b.WriteByte('}')
	default:
		return false, nil
	}
	return true, nil
}

func writeMap(b *strings.Builder, m traits.Mapper, depth int) error {
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
			return fmt.Errorf("canonical: %w", err)
		}
		entries = append(entries, entry{ks, m.Get(k)})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	b.WriteByte('{')
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, e.key)
		b.WriteByte(':')
		if err := writeCanonical(b, e.val, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
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

func writeDouble(b *strings.Builder, f float64) {
	switch {
	case math.IsNaN(f):
		b.WriteString(`"NaN"`)
	case math.IsInf(f, 1):
		b.WriteString(`"Infinity"`)
	case math.IsInf(f, -1):
		b.WriteString(`"-Infinity"`)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		b.WriteString(strconv.FormatInt(int64(f), 10))
	default:
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	}
}

// writeString writes s as a JSON string the way the sorted-key JSON of other
// systems spells it (Python's json.dumps with ensure_ascii=False, RFC 8785):
// only '"', '\\' and the control characters below U+0020 are escaped, with
// the short escapes \b \f \n \r \t where JSON has them and \u00xx
// otherwise. '&', '<', '>', U+2028 and U+2029 are written as they are
// (encoding/json would escape them for HTML, so a regex over a canonical form
// that mentions them would never match). Invalid UTF-8 is written as U+FFFD.
func writeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	// Runs of bytes written as they are go in one write: results and file
	// contents are mostly such runs, and a write per byte was most of the
	// cost of hashing a tool's result (loop detection does, per call).
	plain := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b.WriteString(s[plain:i])
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			}
			i++
			plain = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[plain:i])
			b.WriteRune(utf8.RuneError)
			i++
			plain = i
			continue
		}
		i += size
	}
	b.WriteString(s[plain:])
	b.WriteByte('"')
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
