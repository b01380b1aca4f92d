package compile

import (
	"bytes"
	"encoding/gob"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// modelSources are policy files to check the record of parsed documents
// against: the built-in policies, the policies of every conformance case,
// and the YAML files under the repository's testdata directories that
// parse without error.
func modelSources(t *testing.T) []policy.Source {
	t.Helper()
	out, err := policies.Sources()
	require.NoError(t, err)
	cases, err := filepath.Glob(filepath.Join("..", "conformance", "cases", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, f := range cases {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var c struct {
			Policies yaml.Node `yaml:"policies"`
		}
		require.NoError(t, yaml.Unmarshal(b, &c), f)
		// A file is its text, or a mapping with its layer and text.
		var walk func(n *yaml.Node, name string)
		walk = func(n *yaml.Node, name string) {
			switch n.Kind {
			case yaml.ScalarNode:
				if strings.Contains(n.Value, "apiVersion:") {
					out = append(out, policy.Source{Name: name, Data: []byte(n.Value)})
				}
			case yaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					walk(n.Content[i+1], name+"/"+n.Content[i].Value)
				}
			}
		}
		walk(&c.Policies, f)
	}
	n := len(out)
	require.NoError(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "python" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".yaml") || !strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, policy.Source{Name: path, Data: b})
		return nil
	}))
	require.Greater(t, len(out), n, "testdata policies found")
	return out
}

// The differential test of the recorded documents: for every policy file
// of modelSources that parses without error, the document rebuilt from its
// record is the parser's (reflect.DeepEqual: a field the encoding drops,
// exported or not, fails here), multi-line expressions' places included.
func TestSetCacheRecordsParsedDocuments(t *testing.T) {
	layouts, docs := 0, 0
	for _, src := range modelSources(t) {
		doc, ds := policy.ParseDocument(src.Name, src.Data)
		if ds.HasErrors() || doc == (policy.Document{}) {
			continue
		}
		docs++
		rec := recordSources([]policy.Document{doc})
		require.NotNil(t, rec, "%s: the document does not survive its record", src.Name)
		layouts += len(rec[0].Layouts)
		// Through the encoding the index uses.
		var buf bytes.Buffer
		require.NoError(t, gob.NewEncoder(&buf).Encode(rec))
		var back []setSource
		require.NoError(t, gob.NewDecoder(&buf).Decode(&back))
		got, ok := replaySources(back, 1)
		require.True(t, ok, src.Name)
		again, _ := policy.ParseDocument(src.Name, src.Data)
		require.True(t, reflect.DeepEqual(again, got[0]), "%s: rebuilt document differs from the parser's", src.Name)
		// Every expression maps its runes to the same places.
		want, have := allExprs(&again), allExprs(&got[0])
		require.Equal(t, len(want), len(have))
		for i := range want {
			for off := 0; off <= len(want[i].Text)+1; off++ {
				require.Equal(t, want[i].PosOffset(off), have[i].PosOffset(off))
			}
		}
	}
	assert.Greater(t, docs, 80)
	assert.Greater(t, layouts, 50, "multi-line expressions are covered")
}

// allExprs are the expressions of doc, in exprsOf's order.
func allExprs(doc *policy.Document) []policy.Expr {
	var out []policy.Expr
	exprsOf(reflect.ValueOf(doc).Elem(), func(e *policy.Expr) { out = append(out, *e) })
	return out
}

// A replayed compile of the whole built-in bundle reads its documents from
// the record, rebuilt equal to the parser's.
func TestSetCacheReplaysDocumentsOfBuiltins(t *testing.T) {
	srcs, err := policies.Sources()
	require.NoError(t, err)
	c := &MemorySetCache{}
	_, err = Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	var idx setIndex
	for _, s := range c.m {
		require.NoError(t, gob.NewDecoder(bytes.NewReader(s.index)).Decode(&idx))
	}
	sorted := slices.Clone(srcs)
	slices.SortStableFunc(sorted, func(a, b policy.Source) int { return strings.Compare(a.Name, b.Name) })
	docs, ok := replaySources(idx.Sources, len(sorted))
	require.True(t, ok, "the record keeps the parsed documents")
	for i, src := range sorted {
		want, _ := policy.ParseDocument(src.Name, src.Data)
		assert.True(t, reflect.DeepEqual(want, docs[i]), src.Name)
	}
	set, err := Compile(srcs, WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
}

// A document the encoding cannot give back unchanged is not recorded: the
// replay parses the sources.
func TestSetCacheRecordsOnlyFaithfulDocuments(t *testing.T) {
	doc, ds := policy.ParseDocument("p.yaml", []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: r\n    match: {tools: [Bash]}\n    verdict: allow\n"))
	require.False(t, ds.HasErrors())
	require.NotNil(t, recordSources([]policy.Document{doc}))
	p := *doc.Policy
	r := p.Rules[0]
	r.Tools = []policy.String{} // gob gives back nil
	p.Rules = []policy.Rule{r}
	assert.Nil(t, recordSources([]policy.Document{{Policy: &p}}))
	p.Rules = []policy.Rule{doc.Policy.Rules[0], r}
	assert.Nil(t, recordSources([]policy.Document{doc, {Policy: &p}}), "one unfaithful document drops them all")
}

// A record whose documents do not fit the sources is not replayed, even
// when its cache vouches for it: the compile is a full one, and decides
// alike; so is a record whose documents rewrite an expression's text.
func TestSetCacheInconsistentDocuments(t *testing.T) {
	srcs := someBuiltins(t)
	full, recorded := compiledAndRecorded(t, srcs)
	withLayout := func(idx *setIndex) *setLayout {
		for i := range idx.Sources {
			if len(idx.Sources[i].Layouts) > 0 {
				return &idx.Sources[i].Layouts[0]
			}
		}
		t.Fatal("no multi-line expression")
		return nil
	}
	firstRule := func(idx *setIndex) *policy.Rule {
		for i := range idx.Sources {
			if p := idx.Sources[i].Doc.Policy; p != nil {
				for j := range p.Rules {
					if p.Rules[j].Condition != nil {
						return &p.Rules[j]
					}
				}
			}
		}
		t.Fatal("no rule with a condition")
		return nil
	}
	cases := map[string]func(*setIndex){
		"a document less":           func(idx *setIndex) { idx.Sources = idx.Sources[1:] },
		"a document more":           func(idx *setIndex) { idx.Sources = append(idx.Sources, idx.Sources[0]) },
		"a layout past the text":    func(idx *setIndex) { withLayout(idx).Runs[0].N = 1 << 20 },
		"a layout without runes":    func(idx *setIndex) { withLayout(idx).Runs[0].N = 0 },
		"a layout elsewhere":        func(idx *setIndex) { withLayout(idx).Runs[0].Line++ },
		"a layout of no expression": func(idx *setIndex) { withLayout(idx).Expr = 1 << 20 },
		"a condition rewritten":     func(idx *setIndex) { firstRule(idx).Condition.Text = "false" },
		"a condition removed":       func(idx *setIndex) { firstRule(idx).Condition = nil },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := &MemorySetCache{m: maps.Clone(recorded.m)}
			rewriteIndex(t, c, change)
			set, err := Compile(srcs, WithSetCache(c))
			require.NoError(t, err)
			assert.False(t, set.FromCache())
			assert.Equal(t, full.Warnings(), set.Warnings())
			assert.Equal(t, len(full.Rules()), len(set.Rules()))
		})
	}
}
