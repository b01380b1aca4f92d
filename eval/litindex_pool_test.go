package eval

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/celenv"
)

// A pooled evaluation keeps the literal index of an ordinary long string
// for the next call, and drops one of a string past the pooled buffers'
// bound (celenv.LiteralIndex.Kept): the index holds the string and four
// bytes per byte of it, which a busy pool would keep for good.
func TestReleaseBoundsLiteralIndex(t *testing.T) {
	p, err := celenv.NewPattern(`rm\s+-rf`)
	require.NoError(t, err)
	for _, tc := range []struct {
		n    int
		kept bool
	}{{2500, true}, {64 << 10, true}, {64<<10 + 1, false}, {8 << 20, false}} {
		ev := new(evaluation)
		s := strings.Repeat("x", tc.n-len("rm -rf /")) + "rm -rf /"
		for range 4 { // indexed at the third test (celenv's indexAfter)
			matched, err := p.Match(s, ev)
			require.NoError(t, err)
			require.True(t, matched)
		}
		require.NotNil(t, ev.lits, "%d bytes: indexed", tc.n)
		ev.release()
		assert.Equal(t, tc.kept, ev.lits != nil, "%d bytes: index kept with the pooled evaluation", tc.n)
	}
}
