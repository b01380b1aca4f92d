package policy

import (
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

// CheckYAML parses data, one YAML document of the file named file, and
// validates it against schemaJSON, a JSON Schema (draft 2020-12) such as
// SchemaJSON. It returns the document's root node (nil when data is not
// YAML or is empty) and every problem at its line and column, with the
// codes policy files get: yaml_syntax, unknown_field, wrong_type,
// missing_field, invalid_value, invalid_verdict. Other celguard file
// formats (test suites) use it so that their problems read like a policy
// file's.
func CheckYAML(file string, data, schemaJSON []byte) (*yaml.Node, Diagnostics) {
	var doc yaml.Node
	lines := splitLines(data)
	if err := decodeYAML(data, &doc); err != nil {
		return nil, Diagnostics{yamlError(file, err, len(lines))}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, Diagnostics{{Code: CodeMissingField, Severity: SeverityError, Pos: Pos{File: file, Line: 1, Col: 1}, Message: "empty file"}}
	}
	root := doc.Content[0]
	sch, err := compiledSchema(schemaJSON)
	if err != nil {
		return root, Diagnostics{{Code: CodeInvalidValue, Severity: SeverityError, Pos: Pos{File: file, Line: 1, Col: 1},
			Message: fmt.Sprintf("internal: the schema does not compile: %v", err)}}
	}
	ds := validateAgainst(sch, schemaJSON, file, root, nil)
	d := &decoder{file: file, lines: lines}
	d.duplicateKeys(root)
	ds = append(ds, d.ds...)
	ds.Sort()
	return root, ds
}

// duplicateKeys reports every key set twice in a mapping of the tree.
func (d *decoder) duplicateKeys(n *yaml.Node) {
	if n == nil || n.Kind == yaml.AliasNode {
		return
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]Pos{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.duplicateKey(seen, n.Content[i])
		}
	}
	for _, c := range n.Content {
		d.duplicateKeys(c)
	}
}

var extraSchemas sync.Map // string(schema JSON) -> *checkSchema

func compiledSchema(src []byte) (*checkSchema, error) {
	if s, ok := extraSchemas.Load(string(src)); ok {
		return s.(*checkSchema), nil
	}
	sch, err := compileCheckSchema(src)
	if err != nil {
		return nil, err
	}
	extraSchemas.Store(string(src), sch)
	return sch, nil
}
