package policies_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
)

// TestCorpusReplayed is the corpus's differential test of the
// compiled-set cache: every call of the corpus, with the calls before it,
// gets the same decision and the same explanation (the rules tried, the
// values and places of the sub-expressions that decided) from the
// recommended bundle replayed from its record (compile.WithSetCache) as
// from the bundle compiled in full.
func TestCorpusReplayed(t *testing.T) {
	t.Setenv("HOME", corpusHome)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	hostile, benign := loadCorpus(t)
	ctx := context.Background()
	load := func(opts ...compile.Option) *celguard.Guard {
		g, err := celguard.Load(ctx, celguard.WithUserDir("-"), celguard.WithProjectDir("-"), celguard.WithApprover(deferAll),
			celguard.WithCompileOptions(opts...))
		require.NoError(t, err)
		return g
	}
	full := load()
	cache := &compile.MemorySetCache{}
	require.False(t, load(compile.WithSetCache(cache)).Engine().PolicySet().FromCache(), "the first compile records")
	replayed := load(compile.WithSetCache(cache))
	require.True(t, replayed.Engine().PolicySet().FromCache())

	// decide is the JSON of each decision and explanation of c's calls.
	decide := func(g *celguard.Guard, session string, c corpusCase) string {
		cwd := c.Family.Cwd
		if cwd == "" {
			cwd = corpusWork
		}
		s := g.NewSession(session, nil)
		var out []any
		for _, st := range c.Before {
			tool, args, _ := toolCall("eval", st)
			call := eval.Call{Tool: tool, Args: args, Cwd: cwd}
			var x eval.Explanation
			d, err := s.Before(ctx, call, eval.WithExplain(&x))
			out = append(out, d, x, fmt.Sprint(err))
			res, _ := st.Fields["result"].(string)
			d, err = s.After(ctx, call, eval.Result{Content: res}, eval.WithExplain(&x))
			out = append(out, d, x, fmt.Sprint(err))
		}
		tool, args, _ := toolCall("eval", c)
		var x eval.Explanation
		d, err := s.Before(ctx, eval.Call{Tool: tool, Args: args, Cwd: cwd}, eval.WithExplain(&x))
		out = append(out, d, x, fmt.Sprint(err))
		b, jerr := json.Marshal(out)
		require.NoError(t, jerr)
		return string(b)
	}
	n := 0
	for _, set := range [][]corpusCase{hostile, benign} {
		for i, c := range set {
			session := fmt.Sprintf("replayed-%d-%d", len(set), i)
			assert.Equal(t, decide(full, session, c), decide(replayed, session, c), "%s %v", c.Family.Family, c.Fields)
			n++
		}
	}
	require.Greater(t, n, 1000)
}
