package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// An expression's runs (Expr.runs) place every rune, and the place one
// past the end, where the alignment with the source put it, for every
// scalar of the built-in policies and of this package's test data: a
// place table of one position per rune, which the runs replaced, gives
// the same PosOffset at every offset.
func TestExprRunsAreTheAlignment(t *testing.T) {
	files, err := filepath.Glob("../policies/*.yaml")
	require.NoError(t, err)
	more, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	files = append(files, more...)
	require.Greater(t, len(files), 10)
	scalars, multi := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil {
			continue
		}
		var lines [][]rune
		for _, l := range strings.Split(string(data), "\n") {
			lines = append(lines, []rune(l))
		}
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			for _, c := range n.Content {
				walk(c)
			}
			if n.Kind != yaml.ScalarNode {
				return
			}
			e, at := alignedExpr(f, lines, n)
			if at == nil {
				return
			}
			scalars++
			if len(e.runs) > 1 {
				multi++
			}
			for off := -1; off <= len(at)+1; off++ {
				want := at[min(max(off, 0), len(at)-1)]
				require.Equal(t, want, e.PosOffset(off), "%s:%d:%d offset %d of %q", f, n.Line, n.Column, off, n.Value)
			}
		}
		walk(&root)
	}
	require.Greater(t, scalars, 1000)
	require.Greater(t, multi, 100, "expressions over several lines")
}
