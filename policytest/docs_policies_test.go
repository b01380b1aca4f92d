package policytest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// docBlock is one fenced yaml block of a document and the line its first
// line of YAML is on.
type docBlock struct {
	line int
	text string
}

// yamlBlocks returns the ```yaml blocks of doc.
func yamlBlocks(doc string) []docBlock {
	var out []docBlock
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```yaml" {
			continue
		}
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		out = append(out, docBlock{line: start + 1, text: strings.Join(lines[start:i], "\n") + "\n"})
	}
	return out
}

// TestPoliciesDocBlocksRunAsWritten runs every yaml block of
// docs/policies.md as what it shows (issue 25, "docs/policies.md explains
// session facts, content-aware writes and taint with one runnable example
// each"):
//   - a whole policy compiles without errors or warnings;
//   - a `rules:` fragment compiles, as the rules of a policy of its own;
//   - a list of steps (`before:`/`after:` with `expect:`) is one case of a
//     suite over the recommended built-in bundle, and passes.
func TestPoliciesDocBlocksRunAsWritten(t *testing.T) {
	const file = "../docs/policies.md"
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlocks(string(doc))
	kinds := map[string]int{}
	for _, b := range blocks {
		where := fmt.Sprintf("docs/policies.md:%d", b.line)
		var v any
		if err := yaml.Unmarshal([]byte(b.text), &v); err != nil {
			t.Errorf("%s: not YAML: %v", where, err)
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			text := b.text
			kind := "policy"
			if _, ok := v["apiVersion"]; !ok {
				if _, ok := v["rules"]; !ok {
					t.Errorf("%s: a mapping that is neither a policy nor a rules: fragment", where)
					continue
				}
				kind = "rules"
				text = "apiVersion: celguard.dev/v1\nkind: Policy\nname: doc-example\n" + text
			}
			kinds[kind]++
			_, ds, err := compile.Check([]policy.Source{{Name: where, Data: []byte(text)}})
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			for _, d := range ds {
				if d.Severity == policy.SeverityError || d.Severity == policy.SeverityWarning {
					t.Errorf("%s: %s", where, d)
				}
			}
		case []any:
			kinds["steps"]++
			suite := "name: " + where + "\npolicies: [builtin:recommended]\ncases:\n  - name: as written\n    steps:\n" +
				indent(b.text, "      ")
			s, err := policytest.ParseSuite(where, []byte(suite))
			if err != nil {
				t.Errorf("%s: not a list of steps: %v", where, err)
				continue
			}
			sr := policytest.RunSuite(t.Context(), os.DirFS("."), s, policytest.Options{})
			if sr.Error != "" {
				t.Errorf("%s: %s", where, sr.Error)
			}
			if len(sr.Cases) != 1 {
				t.Errorf("%s: ran %d cases, want 1", where, len(sr.Cases))
			}
			for _, c := range sr.Cases {
				for _, f := range c.Failures {
					t.Errorf("%s: %s", where, f)
				}
			}
		default:
			t.Errorf("%s: a yaml block that is neither a policy, a rules: fragment nor a list of steps", where)
		}
	}
	// The document shows at least one of each; a block that stopped being
	// recognised would otherwise go untested without a word.
	for _, k := range []string{"policy", "rules", "steps"} {
		if kinds[k] == 0 {
			t.Errorf("docs/policies.md has no %s block; found %v", k, kinds)
		}
	}
}

func indent(text, by string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestYAMLBlocks(t *testing.T) {
	got := yamlBlocks("a\n```yaml\nx: 1\n```\n```sh\nls\n```\n```yaml\n- y\n- z\n```\n")
	want := []docBlock{{line: 3, text: "x: 1\n"}, {line: 9, text: "- y\n- z\n"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("yamlBlocks = %v, want %v", got, want)
	}
}
