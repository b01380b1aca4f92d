package stdlib

import (
	"crypto/sha256"
	"encoding/hex"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// ShortHashLen is the number of hex digits of hash.short (64 bits).
const ShortHashLen = 16

// ShortHash returns the first ShortHashLen hex digits of the SHA-256 of the
// canonical form of v (see Canonical): equal data gives equal hashes
// whatever its map key order or number spelling.
func ShortHash(v ref.Val) (string, error) {
	h, err := ValueHash(v)
	if err != nil {
		return "", err
	}
	return h[:ShortHashLen], nil
}

// ValueHash returns the hex SHA-256 of the canonical form of v.
func ValueHash(v ref.Val) (string, error) {
	c, err := Canonical(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:]), nil
}

// Hash returns the hash library (celguard.lib.hash): stable fingerprints of
// values for counter keys and result comparisons. Hashes of values are taken
// over canonical(value), so {"a":1,"b":2} and {"b":2,"a":1} hash the same.
//
// # hash.short
//
// The first 16 hex digits (64 bits) of the SHA-256 of canonical(value).
//
//	hash.short(<dyn>) -> <string>
//
// Examples:
//
//	hash.short({"b": 2, "a": 1}) == hash.short({"a": 1, "b": 2}) // true
//	hash.short("x").size()                                        // 16
//
// Introduced in stdlib version 1.
//
// # hash.value
//
// The full hex SHA-256 of canonical(value).
//
//	hash.value(<dyn>) -> <string>
//
// Examples:
//
//	hash.value([1, 2]).size() // 64
//
// Introduced in stdlib version 1.
//
// # hash.sha256
//
// The hex SHA-256 of a string's UTF-8 bytes, or of bytes (no canonical form).
//
//	hash.sha256(<string>) -> <string>
//	hash.sha256(<bytes>) -> <string>
//
// Examples:
//
//	hash.sha256("abc") // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
//
// Introduced in stdlib version 1.
func (l *Lib) Hash() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "hash"})
}

func (l *Lib) hashFns() []*fnDef {
	// About 5ns per byte of a string (JSON escaping and SHA-256) and per
	// top-level element of a list or map; nested sizes are not known.
	valueCost := linearCost(20, 0, 0.1)
	return []*fnDef{
		{ns: "hash", name: "hash.short", version: 1, ovs: []*ovDef{{
			id: "hash_short_dyn", args: []*cel.Type{cel.DynType}, result: cel.StringType, cost: valueCost.withSize(fixedSize(ShortHashLen)),
			unary: func(v ref.Val) ref.Val {
				h, err := ShortHash(v)
				if err != nil {
					return types.NewErr("hash.short: %v", err)
				}
				return types.String(h)
			},
		}}},
		{ns: "hash", name: "hash.value", version: 1, ovs: []*ovDef{{
			id: "hash_value_dyn", args: []*cel.Type{cel.DynType}, result: cel.StringType, cost: valueCost.withSize(fixedSize(64)),
			unary: func(v ref.Val) ref.Val {
				h, err := ValueHash(v)
				if err != nil {
					return types.NewErr("hash.value: %v", err)
				}
				return types.String(h)
			},
		}}},
		{ns: "hash", name: "hash.sha256", version: 1, ovs: []*ovDef{
			{id: "hash_sha256_string", args: []*cel.Type{cel.StringType}, result: cel.StringType,
				cost: linearCost(10, 0, 0.1).withSize(fixedSize(64)), unary: func(v ref.Val) ref.Val {
					s, ok := v.(types.String)
					if !ok {
						return types.MaybeNoSuchOverloadErr(v)
					}
					sum := sha256.Sum256([]byte(s))
					return types.String(hex.EncodeToString(sum[:]))
				}},
			{id: "hash_sha256_bytes", args: []*cel.Type{cel.BytesType}, result: cel.StringType,
				cost: linearCost(10, 0, 0.1).withSize(fixedSize(64)), unary: func(v ref.Val) ref.Val {
					b, ok := v.(types.Bytes)
					if !ok {
						return types.MaybeNoSuchOverloadErr(v)
					}
					sum := sha256.Sum256([]byte(b))
					return types.String(hex.EncodeToString(sum[:]))
				}},
		}},
	}
}
