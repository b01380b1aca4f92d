package policies

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard/policy"
)

// SelfProtectionSource is the name of the built-in self-protection
// policy's source, as Select returns it.
const SelfProtectionSource = "builtin/self-protection.yaml"

// secretFilesVar is the variable of the self-protection policy that
// ProtectFiles fills.
const secretFilesVar = "secret_files"

// ProtectFiles returns srcs with paths made protected places of the
// built-in self-protection policy (its secret_files variable): a tool
// call that writes or reads one of them is blocked by the mandatory rule.
// The composition root (celguard.Config.ProtectedFiles) gives it the
// secrets of the deployment, such as the token files of `celguard serve`,
// for every entry point alike. srcs without the built-in policy (a
// program's own sources, the bundle none) are returned as they are; the
// other sources are never changed. paths must be absolute or start with
// "~/"; a relative one is an error (it would be resolved against each
// call's working directory).
func ProtectFiles(srcs []policy.Source, paths []string) ([]policy.Source, error) {
	if len(paths) == 0 {
		return srcs, nil
	}
	var elems []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
			return nil, fmt.Errorf("protected file %q: want an absolute path (or one under ~/)", p)
		}
		// strconv.Quote's escapes (\", \\, \n, \xNN, \uNNNN) are CEL's.
		elems = append(elems, strconv.Quote(p))
	}
	if len(elems) == 0 {
		return srcs, nil
	}
	expr := "[" + strings.Join(elems, ", ") + "]"
	out := make([]policy.Source, len(srcs))
	copy(out, srcs)
	for i, s := range out {
		if s.Name != SelfProtectionSource || s.Layer != policy.LayerBuiltin {
			continue
		}
		data, err := setVariable(s.Data, secretFilesVar, expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		out[i].Data = data
	}
	return out, nil
}

// setVariable sets the expression of the variable name in a policy file's
// variables, through the YAML tree (comments and order are kept).
func setVariable(data []byte, name, expr string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("not one YAML document")
	}
	vars := mapValue(doc.Content[0], "variables")
	if vars == nil || vars.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("no variables")
	}
	for _, v := range vars.Content {
		if n := mapValue(v, "name"); n == nil || n.Value != name {
			continue
		}
		e := mapValue(v, "expression")
		if e == nil {
			return nil, fmt.Errorf("variable %s has no expression", name)
		}
		e.Kind, e.Tag, e.Style, e.Value = yaml.ScalarNode, "!!str", yaml.SingleQuotedStyle, expr
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("no variable %s", name)
}

// mapValue is the value of key in a mapping node, nil when there is none.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
