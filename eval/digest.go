package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	"github.com/celguard/celguard/stdlib"
)

// This file is the digests of calls: a recent call's digest of its
// arguments (session.recent) and the digest an approval is bound to. Both
// are kept in session state and compared across processes and versions,
// so their bytes never change (TestArgsDigestGolden, TestCallDigestGolden);
// both hash the arguments' canonical form in a pooled buffer.

// argsDigest is the first 16 hex digits of the SHA-256 of the arguments'
// canonical JSON ("" when they cannot be encoded). The canonical form is
// written into a pooled buffer and hashed there, and the hex digits made
// in an array: the digest's string is its one allocation
// (TestArgsDigestGolden pins the digests).
func argsDigest(args map[string]any) string {
	var v any = args
	if args == nil {
		v = map[string]any{}
	}
	bp := digestBufs.Get().(*[]byte)
	js, err := stdlib.AppendCanonicalNative((*bp)[:0], v)
	var sum [sha256.Size]byte
	if err == nil {
		sum = sha256.Sum256(js)
	}
	if cap(js) <= maxPooledDigest {
		*bp = js
		digestBufs.Put(bp)
	}
	if err != nil {
		return ""
	}
	var digits [16]byte
	hex.Encode(digits[:], sum[:8])
	return string(digits[:])
}

// digestBufs are argsDigest's buffers; one past maxPooledDigest bytes is
// not kept.
var digestBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledDigest = 64 << 10

// CallDigest is the digest of the exact call an approval is bound to:
// SHA-256 over the tool, the canonical JSON of the arguments and the
// working directory, in lowercase hex.
func CallDigest(c Call) (string, error) {
	// The message is the four parts, each as fmt's "%d:%s" of its length
	// and itself, assembled in a pooled buffer behind the arguments'
	// canonical form and hashed there (TestCallDigestGolden pins the
	// digests).
	bp := digestBufs.Get().(*[]byte)
	b, err := stdlib.AppendCanonicalNative((*bp)[:0], c.Args)
	if err != nil {
		digestBufs.Put(bp)
		return "", fmt.Errorf("call digest: %w", err)
	}
	n := len(b)
	for i, p := range [...]string{"celguard call v1", c.Tool, "", c.Cwd} {
		if i == 2 {
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, ':')
			b = append(b, b[:n]...)
			continue
		}
		b = strconv.AppendInt(b, int64(len(p)), 10)
		b = append(b, ':')
		b = append(b, p...)
	}
	sum := sha256.Sum256(b[n:])
	if cap(b) <= maxPooledDigest {
		*bp = b
		digestBufs.Put(bp)
	}
	var digits [2 * sha256.Size]byte
	hex.Encode(digits[:], sum[:])
	return string(digits[:]), nil
}
