package celguard

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestSameSourceComparesEveryField fails when policy.Source gains a field
// sameSource does not compare: sourcesDigest would keep an old digest for
// sources that differ only there, once compile.Digest hashes it.
func TestSameSourceComparesEveryField(t *testing.T) {
	base := policy.Source{Name: "a.yaml", Data: []byte("policy: a"), Layer: policy.LayerProject, Bundle: "b@1/serial-1"}
	require.True(t, sameSource(base, base))
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		other := base
		other.Data = bytes.Clone(base.Data)
		f := reflect.ValueOf(&other).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Uint8:
			f.SetUint(f.Uint() + 1)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.SetBytes(append(f.Bytes(), 'x'))
		default:
			t.Fatalf("policy.Source.%s is a %s: teach sameSource and this test to compare it", typ.Field(i).Name, f.Kind())
		}
		assert.False(t, sameSource(base, other), "sources that differ only in %s are the same to sameSource", typ.Field(i).Name)
	}
}
