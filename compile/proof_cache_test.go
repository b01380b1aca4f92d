package compile_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/stdlib"
)

// proofs lists, for every program of the set, its proven size and bound.
func proofs(set *compile.PolicySet) []string {
	var out []string
	add := func(what string, p *compile.Program) {
		if p != nil {
			n, b := p.FastUpTo()
			out = append(out, fmt.Sprintf("%s %d %d", what, n, b))
		}
	}
	for _, pol := range set.Policies() {
		for _, v := range pol.Variables {
			add(pol.Name+"."+v.Name, v.Program)
		}
		for _, c := range pol.Counters {
			add(c.ID+".key", c.Key)
			add(c.ID+".increment_when", c.IncrementWhen)
			add(c.ID+".reset_when", c.ResetWhen)
		}
	}
	for _, r := range set.Rules() {
		add(r.Policy.Name+"/"+r.ID, r.Condition)
		add(r.Policy.Name+"/"+r.ID+".message", r.Message)
	}
	return out
}

// proofKey returns the key of the cost proofs' entry.
func proofKey(t *testing.T, c *compile.MemoryASTCache) string {
	var keys []string
	for k := range maps.Keys(c.Entries()) {
		if strings.HasPrefix(k, "proofs:") {
			keys = append(keys, k)
		}
	}
	require.Len(t, keys, 1, "one entry of cost proofs per set")
	return keys[0]
}

// The recommended bundle compiled from a cache holding its cost proofs has
// the same proofs as compiled without, and an entry that is not exactly
// what the set needs is ignored, the proofs computed again and the entry
// replaced.
func TestCostProofsCached(t *testing.T) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	require.NoError(t, err)
	plain, err := compile.Compile(srcs)
	require.NoError(t, err)
	want := proofs(plain)
	require.True(t, slices.ContainsFunc(want, func(s string) bool {
		return !strings.HasSuffix(s, " 0 0") && !strings.Contains(s, " 18446744073709551615 ")
	}),
		"some programs are proven at a size")

	cache := &compile.MemoryASTCache{}
	_, err = compile.Compile(srcs, compile.WithASTCache(cache))
	require.NoError(t, err)
	key := proofKey(t, cache)
	good, _ := cache.Get(key)
	warm, err := compile.Compile(srcs, compile.WithASTCache(cache))
	require.NoError(t, err)
	assert.Equal(t, want, proofs(warm), "proofs from the cache")

	count, k := binary.Uvarint(good)
	require.Positive(t, k)
	everything := binary.AppendUvarint(nil, count) // every program proven at the largest size, bound 1
	for range count {
		everything = binary.AppendUvarint(everything, compile.MaxProvenInput)
		everything = binary.AppendUvarint(everything, 1)
	}
	overLimit := binary.AppendUvarint(nil, count)
	for range count {
		overLimit = binary.AppendUvarint(overLimit, 16)
		overLimit = binary.AppendUvarint(overLimit, celenv.DefaultCostLimit+1)
	}
	unknownSize := binary.AppendUvarint(nil, count)
	for range count {
		unknownSize = binary.AppendUvarint(unknownSize, 17)
		unknownSize = binary.AppendUvarint(unknownSize, 1)
	}
	for name, bad := range map[string][]byte{
		"empty":                  {},
		"one program less":       append(binary.AppendUvarint(nil, count-1), good[k:]...),
		"one program more":       append(binary.AppendUvarint(nil, count+1), good[k:]...),
		"trailing bytes":         append(slices.Clone(good), 0),
		"truncated":              good[:len(good)-1],
		"a bound over the limit": overLimit,
		"a size never tried":     unknownSize,
	} {
		t.Run(name, func(t *testing.T) {
			cache.Put(key, bad)
			set, err := compile.Compile(srcs, compile.WithASTCache(cache))
			require.NoError(t, err)
			assert.Equal(t, want, proofs(set), "a malformed entry is ignored")
			got, _ := cache.Get(key)
			assert.Equal(t, good, got, "and replaced")
		})
	}

	// A well-formed forgery is what the cache's authentication is for
	// (hooks.ASTCache): compile itself can only take it as it is.
	cache.Put(key, everything)
	forged, err := compile.Compile(srcs, compile.WithASTCache(cache))
	require.NoError(t, err)
	assert.NotEqual(t, want, proofs(forged), "control: the entry is used when well formed")

	// An environment of celguard's own options (another cost limit, symlink
	// resolution) is cached under a key of its own, never the default's.
	env, err := celenv.New(celenv.WithCostLimit(500_000), celenv.WithStdlib(stdlib.WithSymlinks(true)))
	require.NoError(t, err)
	own := &compile.MemoryASTCache{}
	_, err = compile.Compile(srcs, compile.WithASTCache(own), compile.WithEnv(env))
	require.NoError(t, err)
	var ownKeys []string
	for k := range own.Entries() {
		if strings.HasPrefix(k, "proofs:") {
			ownKeys = append(ownKeys, k)
		}
	}
	require.Len(t, ownKeys, 1, "proofs cached for an environment of celguard's own options")
	assert.NotEqual(t, key, ownKeys[0], "another environment's proofs under the default's key")

	// An environment with an embedder's library has no identity to key on:
	// nothing is cached.
	custom, err := celenv.New(celenv.WithLibrary(cel.Variable("extra", cel.StringType)))
	require.NoError(t, err)
	other := &compile.MemoryASTCache{}
	_, err = compile.Compile(srcs, compile.WithASTCache(other), compile.WithEnv(custom))
	require.NoError(t, err)
	for k := range other.Entries() {
		assert.False(t, strings.HasPrefix(k, "proofs:"), "proofs cached for a custom environment")
	}
}
