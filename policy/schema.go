package policy

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of policy files. Editors can
// use it to complete and validate policies.
//
//go:embed schema/policy.schema.json
var SchemaJSON []byte

// ToolClassesSchemaJSON is the JSON Schema (draft 2020-12) of ToolClasses
// files.
//
//go:embed schema/toolclasses.schema.json
var ToolClassesSchemaJSON []byte

// OverridesSchemaJSON is the JSON Schema (draft 2020-12) of Overrides files.
//
//go:embed schema/overrides.schema.json
var OverridesSchemaJSON []byte

var compiledSchemas = sync.OnceValues(func() (map[string]*checkSchema, error) {
	out := map[string]*checkSchema{}
	for kind, src := range map[string][]byte{KindPolicy: SchemaJSON, KindToolClasses: ToolClassesSchemaJSON, KindOverrides: OverridesSchemaJSON} {
		sch, err := compileCheckSchema(src)
		if err != nil {
			return nil, err
		}
		out[kind] = sch
	}
	return out, nil
})

// validateSchema checks the document against the JSON Schema and returns the
// problems the decoder has not already reported at the same place.
func validateSchema(file, kind string, root *yaml.Node, already Diagnostics) Diagnostics {
	schemas, err := compiledSchemas()
	sch := schemas[kind]
	if err == nil && sch == nil {
		err = fmt.Errorf("no schema for kind %q", kind)
	}
	if err != nil {
		// The schema is embedded and tested; failing here is a build defect.
		return Diagnostics{{Code: CodeInvalidValue, Severity: SeverityError, Pos: Pos{File: file, Line: 1, Col: 1},
			Message: fmt.Sprintf("internal: policy schema does not compile: %v", err)}}
	}
	raw := map[string][]byte{KindPolicy: SchemaJSON, KindToolClasses: ToolClassesSchemaJSON, KindOverrides: OverridesSchemaJSON}[kind]
	return validateAgainst(sch, raw, file, root, already)
}

// validateAgainst checks a document against a compiled schema, whose JSON
// is raw, and returns the problems not already reported at the same place.
func validateAgainst(sch *checkSchema, raw []byte, file string, root *yaml.Node, already Diagnostics) Diagnostics {
	budget := 1 << 20 // nodes; aliases could otherwise expand a small file exponentially
	inst, err := toJSONValue(root, 0, &budget)
	if err != nil {
		return nil // the decoder reports what is wrong with the shape
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	seen := map[Pos]bool{}
	for _, d := range already {
		seen[d.Pos] = true
	}
	var out Diagnostics
	for _, leaf := range leaves(verr) {
		for _, d := range schemaDiagnostics(file, root, leaf, raw) {
			if !seen[d.Pos] {
				seen[d.Pos] = true
				out = append(out, d)
			}
		}
	}
	return out
}

func leaves(e *schemaError) []*schemaError {
	if len(e.Causes) == 0 {
		return []*schemaError{e}
	}
	causes := e.Causes
	switch e.Kind {
	case errOneOf, errAnyOf:
		// Of the alternatives, report those the value's type fits: a list
		// where a list or a mapping is allowed is wrong as a list.
		var fit []*schemaError
		for _, c := range causes {
			if c.Kind != errType || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
				fit = append(fit, c)
			}
		}
		if len(fit) > 0 {
			causes = fit
		}
	}
	var out []*schemaError
	for _, c := range causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// schemaDiagnostics maps one schema error to diagnostics at the YAML node it
// is about: the offending key for an unknown property, the value otherwise.
func schemaDiagnostics(file string, root *yaml.Node, e *schemaError, raw []byte) Diagnostics {
	n := nodeAt(root, e.InstanceLocation)
	pos := Pos{File: file, Line: n.Line, Col: n.Column}
	where := "/" + strings.Join(e.InstanceLocation, "/")
	mk := func(code Code, p Pos, msg string) Diagnostic {
		return Diagnostic{Code: code, Severity: SeverityError, Pos: p, Message: msg}
	}
	switch e.Kind {
	case errAdditional:
		var out Diagnostics
		for _, prop := range e.Props {
			kp := pos
			if kn := keyNode(n, prop); kn != nil {
				kp = Pos{File: file, Line: kn.Line, Col: kn.Column}
			}
			msg := fmt.Sprintf("unknown field %q at %s", prop, where)
			if near, ok := Closest(prop, schemaProperties(raw, e.SchemaURL)); ok {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			out = append(out, mk(CodeUnknownField, kp, msg))
		}
		return out
	case errRequired:
		return Diagnostics{mk(CodeMissingField, pos, fmt.Sprintf("%s is missing the required field(s) %s", where, strings.Join(e.Props, ", ")))}
	case errType:
		return Diagnostics{mk(CodeWrongType, pos, fmt.Sprintf("%s must be %s, not %s", where, strings.Join(e.Want, " or "), e.Got))}
	case errDepRequired:
		return Diagnostics{mk(CodeMissingField, pos, fmt.Sprintf("%s has %s, which needs %s", where, e.Prop, strings.Join(e.Props, ", ")))}
	case errOneOf:
		if len(e.Subschemas) > 1 {
			return Diagnostics{mk(CodeInvalidValue, pos, fmt.Sprintf("%s fits more than one of its allowed forms: keep the keys of one", where))}
		}
		return Diagnostics{mk(CodeInvalidValue, pos, fmt.Sprintf("%s: %s", where, firstLine(e.Error())))}
	case errMinLength:
		if e.MinLen == 1 {
			return Diagnostics{mk(CodeInvalidValue, pos, fmt.Sprintf("%s must not be empty", where))}
		}
		return Diagnostics{mk(CodeInvalidValue, pos, fmt.Sprintf("%s must be at least %d characters long", where, e.MinLen))}
	case errEnum, errConst:
		code := CodeInvalidValue
		if last(e.InstanceLocation) == "verdict" {
			code = CodeInvalidVerdict
		} else if last(e.InstanceLocation) == "phase" {
			code = CodeInvalidPhase
		}
		return Diagnostics{mk(code, pos, fmt.Sprintf("%s: %s", where, e.Error()))}
	default:
		return Diagnostics{mk(CodeInvalidValue, pos, fmt.Sprintf("%s: %s", where, firstLine(e.Error())))}
	}
}

func last(p []string) string {
	if len(p) == 0 {
		return ""
	}
	return p[len(p)-1]
}

func firstLine(s string) string {
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return strings.TrimPrefix(s, "- ")
}

// nodeAt follows a JSON pointer's tokens through the YAML tree and returns the
// deepest node reached.
func nodeAt(n *yaml.Node, path []string) *yaml.Node {
	n = resolve(n)
	for _, tok := range path {
		switch n.Kind {
		case yaml.MappingNode:
			next := valueNode(n, tok)
			if next == nil {
				return n
			}
			n = resolve(next)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n
			}
			n = resolve(n.Content[i])
		default:
			return n
		}
	}
	return n
}

func keyNode(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

func valueNode(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// toJSONValue converts a YAML node to the JSON data model the validator reads.
// It expands aliases, visiting at most *budget nodes.
func toJSONValue(n *yaml.Node, depth int, budget *int) (any, error) {
	if depth > 100 {
		return nil, errors.New("too deeply nested")
	}
	if *budget--; *budget < 0 {
		return nil, errors.New("too many nodes once aliases are expanded")
	}
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := toJSONValue(n.Content[i+1], depth+1, budget)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := toJSONValue(c, depth+1, budget)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			return n.Value == "true" || n.Value == "True" || n.Value == "TRUE", nil
		case "!!int", "!!float":
			var v any
			if err := json.Unmarshal([]byte(n.Value), &v); err == nil {
				if f, ok := v.(float64); ok {
					return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
				}
			}
			if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10)), nil
			}
			return n.Value, nil
		}
		return n.Value, nil
	}
	return nil, errors.New("unsupported YAML node")
}
