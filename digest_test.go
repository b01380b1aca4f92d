package celguard

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// TestSourcesDigestIsDigest: the digest a Guard keeps of its sources is
// compile.Digest of the sources it is given, whatever changed since the
// last: a byte of a file (its length the same), a layer, trust, a name,
// the order, a file added or removed.
func TestSourcesDigestIsDigest(t *testing.T) {
	src := func(name, data string, layer policy.Layer, untrusted bool) policy.Source {
		return policy.Source{Name: name, Data: []byte(data), Layer: layer, Untrusted: untrusted}
	}
	a := src("a.yaml", "policy: a", policy.LayerBuiltin, false)
	b := src("b.yaml", "policy: b", policy.LayerProject, true)
	steps := [][]policy.Source{
		{a, b},
		{a, b},
		{a, src("b.yaml", "policy: c", policy.LayerProject, true)},
		{a, src("b.yaml", "policy: b", policy.LayerUser, true)},
		{a, src("b.yaml", "policy: b", policy.LayerProject, false)},
		{a, src("c.yaml", "policy: b", policy.LayerProject, true)},
		{b, a},
		{a},
		{a, b, src("d.yaml", "", policy.LayerProject, false)},
		nil,
		{a, b},
	}
	g := &Guard{}
	for i, srcs := range steps {
		assert.Equal(t, compile.Digest(srcs), g.sourcesDigest(srcs), "step %d", i)
	}
	// Sources changed in place after they were digested.
	srcs := []policy.Source{src("a.yaml", "policy: a", policy.LayerBuiltin, false)}
	g.sourcesDigest(srcs)
	srcs[0].Data[0] = 'P'
	assert.Equal(t, compile.Digest(srcs), g.sourcesDigest(srcs))
}
