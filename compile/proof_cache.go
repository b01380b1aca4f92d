package compile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
)

// The cost proofs (proveBounds) are two thirds of a compile of the
// recommended bundle, and a hook compiles the same set in every process. So
// a compile with an ASTCache keeps them there too, as one entry for the
// whole set: the proofs depend on every expression and on the sizes the
// constant variables give one another, so they are cached by the set and
// never per expression.
//
// The entry's key covers the build of celguard and cel-go (buildID), the
// set (its Digest: every source's name, layer, trust and content), the
// cost limit, the sizes tried and the environment's Identity (stdlib
// version, home directory, symlink resolution: they decide which functions
// exist and what constants fold to); an environment without an identity
// (an embedder's library may declare other functions with other costs) is
// never cached. The value lists,
// for each expression that needs cost accounting, in the order the compiler
// checked them, the size it is proven at (0: none) and the proven bound.
//
// A cached proof is what lets a program run without the accounting, so a
// forged one would lift the cost limit: the ASTCache must authenticate its
// entries as the AST entries (hooks.ASTCache keeps an HMAC of both). On top
// of that, a value is used only if it is well formed, lists exactly the
// expressions of this set that need accounting, names only sizes the
// compiler tries and bounds within the limit; anything else is ignored and
// the proofs are computed again (and the entry replaced).
const proofCacheVersion = "celguard-proofs-1"

// proofKey is the cache key of the set's proofs, or "" when they are not
// cached (no cache, or an environment without an identity).
func (c *compiler) proofKey() string {
	id := c.cfg.env.Identity()
	if c.cfg.cache == nil || id == "" {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%v\x00%s", proofCacheVersion, buildID(), c.set.digest, c.cfg.env.CostLimit(), boundSizes, id)
	return "proofs:" + hex.EncodeToString(h.Sum(nil))
}

// accounting returns the programs that need cost accounting, in the order
// their expressions were checked.
func (c *compiler) accounting() []*Program {
	var out []*Program
	for _, ce := range c.checked {
		if p := c.programs[ce.ast]; p != nil && p.accounts() && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// encodeProofs encodes, for each of progs, the size it is proven at and
// its bound.
func encodeProofs(progs []*Program, proven map[*Program]uint64) []byte {
	out := binary.AppendUvarint(nil, uint64(len(progs)))
	for _, p := range progs {
		n := proven[p]
		out = binary.AppendUvarint(out, n)
		if n > 0 {
			out = binary.AppendUvarint(out, p.bound)
		}
	}
	return out
}

// decodeProofs reads what encodeProofs wrote for progs, checking every
// size and bound; ok is false on anything unexpected.
func decodeProofs(b []byte, progs []*Program, limit uint64) (sizes, bounds []uint64, ok bool) {
	count, k := binary.Uvarint(b)
	if k <= 0 || count != uint64(len(progs)) {
		return nil, nil, false
	}
	b = b[k:]
	sizes, bounds = make([]uint64, len(progs)), make([]uint64, len(progs))
	for i := range progs {
		n, k := binary.Uvarint(b)
		if k <= 0 || (n != 0 && !slices.Contains(boundSizes, n)) {
			return nil, nil, false
		}
		b = b[k:]
		if n == 0 {
			continue
		}
		bound, k := binary.Uvarint(b)
		if k <= 0 || bound > limit {
			return nil, nil, false
		}
		b = b[k:]
		sizes[i], bounds[i] = n, bound
	}
	return sizes, bounds, len(b) == 0
}
