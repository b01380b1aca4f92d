package policy

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest policy file Parse reads.
const MaxFileSize = 4 << 20

var (
	idPattern    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`) })
	identPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	judgeName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`) })
	celKeywords  = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
)

// Parse reads one policy file. It returns the policy (as much of it as could
// be read) and every problem found, each at its file:line:col. The policy is
// nil only when the file is not YAML at all.
func Parse(file string, src []byte) (p *Policy, ds Diagnostics) {
	doc, ds := ParseDocument(file, src)
	switch {
	case doc.Classes != nil:
		ds = append(ds, Diagnostic{Code: CodeInvalidValue, Severity: SeverityError, Pos: doc.Classes.Pos,
			Message: "this is a ToolClasses file, not a policy"})
	case doc.Overrides != nil:
		ds = append(ds, Diagnostic{Code: CodeInvalidValue, Severity: SeverityError, Pos: doc.Overrides.Pos,
			Message: "this is an Overrides file, not a policy"})
	}
	return doc.Policy, ds
}

// Document is one parsed file of a policy set: a Policy or a ToolClasses
// mapping, as its kind says. At most one field is set.
type Document struct {
	Policy    *Policy
	Classes   *ToolClasses
	Overrides *Overrides
}

// ParseDocument reads one file of a policy set, of either kind, and returns
// every problem found, each at its file:line:col. Both fields are nil only
// when the file is not YAML at all.
func ParseDocument(file string, src []byte) (Document, Diagnostics) {
	return parseDocument(file, src, true)
}

// ParseDocumentValidated is ParseDocument without the validation against
// the JSON Schema of its kind, which only adds diagnostics: the Document
// is the same. It is for a file whose full parse is known to have passed
// (a compile replayed from the compiled-set cache, whose record is of
// these exact bytes); anything else calls ParseDocument.
func ParseDocumentValidated(file string, src []byte) (Document, Diagnostics) {
	return parseDocument(file, src, false)
}

func parseDocument(file string, src []byte, schema bool) (Document, Diagnostics) {
	var ds Diagnostics
	if len(src) > MaxFileSize {
		ds.errorf(CodeInvalidValue, Pos{File: file, Line: 1, Col: 1}, "file is %d bytes; policy files are limited to %d", len(src), MaxFileSize)
		return Document{}, ds
	}
	var doc yaml.Node
	lines := splitLines(src)
	if err := decodeYAML(src, &doc); err != nil {
		ds = append(ds, yamlError(file, err, len(lines)))
		return Document{}, ds
	}
	d := &decoder{file: file, lines: lines}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		d.ds.errorf(CodeMissingField, Pos{File: file, Line: 1, Col: 1}, "empty policy file: expected apiVersion, kind, name and rules")
		return Document{}, d.ds
	}
	root := doc.Content[0]
	var out Document
	kind := KindPolicy
	if k := valueNode(resolve(root), "kind"); k != nil {
		switch resolve(k).Value {
		case KindToolClasses, KindOverrides:
			kind = resolve(k).Value
		}
	}
	switch kind {
	case KindToolClasses:
		out.Classes = d.toolClasses(root)
	case KindOverrides:
		out.Overrides = d.overrides(root)
	default:
		out.Policy = d.policy(root)
	}
	if schema {
		d.ds = append(d.ds, validateSchema(file, kind, root, d.ds)...)
	}
	d.ds.Sort()
	return out, d.ds
}

// decodeYAML decodes one YAML document into a node, turning a panic in the
// YAML library into an error and rejecting a second document.
func decodeYAML(src []byte, doc *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(string(src)))
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) { // no document: the file is empty
			return nil
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("yaml: line %d: a policy file holds one document; split this one into its own file", extra.Line)
	}
	return nil
}

func splitLines(src []byte) [][]rune {
	s := strings.ReplaceAll(string(src), "\r\n", "\n")
	parts := strings.Split(s, "\n")
	lines := make([][]rune, len(parts))
	for i, p := range parts {
		lines[i] = []rune(p)
	}
	return lines
}

type decoder struct {
	file  string
	lines [][]rune
	ds    Diagnostics
}

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!bool":
			return "a boolean"
		case "!!float":
			return "a number"
		}
		return "a scalar"
	}
	return "a value"
}

// fields walks a mapping node. Each known key's value is handed to its
// handler; an unknown key is reported with the keys that are allowed.
func (d *decoder) fields(n *yaml.Node, what string, handlers map[string]func(key, val *yaml.Node)) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.ds.errorf(CodeWrongType, d.pos(n), "%s must be a mapping, not %s", what, kindName(n))
		return false
	}
	seen := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if d.duplicateKey(seen, k) {
			continue
		}
		h, ok := handlers[k.Value]
		if !ok {
			keys := make([]string, 0, len(handlers))
			for name := range handlers {
				keys = append(keys, name)
			}
			slices.Sort(keys)
			if near, ok := Closest(k.Value, keys); ok {
				d.ds.errorf(CodeUnknownField, d.pos(k), "unknown field %q in %s; did you mean %q? (expected one of: %s)", k.Value, what, near, strings.Join(keys, ", "))
				continue
			}
			d.ds.errorf(CodeUnknownField, d.pos(k), "unknown field %q in %s; expected one of: %s", k.Value, what, strings.Join(keys, ", "))
			continue
		}
		h(k, v)
	}
	return true
}

// duplicateKey reports a key already seen in the same mapping. YAML forbids
// it, and yaml.v3 does not check it when decoding into nodes: without this,
// the second value would silently replace the first.
func (d *decoder) duplicateKey(seen map[string]Pos, k *yaml.Node) bool {
	if first, dup := seen[k.Value]; dup {
		d.ds = append(d.ds, Diagnostic{Code: CodeYAMLSyntax, Severity: SeverityError, Pos: d.pos(k), Related: []Pos{first},
			Message: fmt.Sprintf("key %q is already set at %d:%d; a key may appear once in a mapping", k.Value, first.Line, first.Col)})
		return true
	}
	seen[k.Value] = d.pos(k)
	return false
}

func has(n *yaml.Node, key string) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return true // already reported as the wrong type
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func (d *decoder) require(n *yaml.Node, what string, keys ...string) {
	for _, k := range keys {
		if !has(n, k) {
			d.ds.errorf(CodeMissingField, d.pos(n), "%s is missing the required field %q", what, k)
		}
	}
}

// str reads a scalar as text. Numbers and booleans are accepted as their
// spelling; null, lists and mappings are not.
func (d *decoder) str(n *yaml.Node, what string) (String, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.ds.errorf(CodeWrongType, d.pos(n), "%s must be a string, not %s", what, kindName(n))
		return String{Pos: d.pos(n)}, false
	}
	return String{Value: n.Value, Pos: d.pos(n)}, true
}

func (d *decoder) id(n *yaml.Node, what string) String {
	s, ok := d.str(n, what)
	if ok && !idPattern().MatchString(s.Value) {
		d.ds.errorf(CodeInvalidID, s.Pos, "%s %q must start with a letter or digit and use only letters, digits and _ . : -", what, s.Value)
	}
	return s
}

func (d *decoder) ident(n *yaml.Node, what string) String {
	s, ok := d.str(n, what)
	if !ok {
		return s
	}
	switch {
	case !identPattern().MatchString(s.Value):
		d.ds.errorf(CodeInvalidID, s.Pos, "%s %q must be a CEL identifier: a letter or _ followed by letters, digits or _", what, s.Value)
	case slices.Contains(celKeywords, s.Value):
		d.ds.errorf(CodeReservedName, s.Pos, "%s %q is a CEL keyword", what, s.Value)
	}
	return s
}

func (d *decoder) expr(n *yaml.Node, what string) (Expr, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.ds.errorf(CodeWrongType, d.pos(n), "%s must be a CEL expression (a string), not %s", what, kindName(n))
		return Expr{}, false
	}
	if strings.TrimSpace(n.Value) == "" {
		d.ds.errorf(CodeInvalidValue, d.pos(n), "%s is an empty CEL expression", what)
		return Expr{}, false
	}
	return exprFromNode(d.file, d.lines, n), true
}

func (d *decoder) exprPtr(n *yaml.Node, what string) *Expr {
	e, ok := d.expr(n, what)
	if !ok {
		return nil
	}
	return &e
}

func (d *decoder) list(n *yaml.Node, what string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.ds.errorf(CodeWrongType, d.pos(n), "%s must be a list, not %s", what, kindName(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out
}

func (d *decoder) policy(n *yaml.Node) *Policy {
	p := &Policy{File: d.file, Pos: d.pos(n)}
	ok := d.fields(n, "the policy", map[string]func(k, v *yaml.Node){
		"apiVersion": func(_, v *yaml.Node) {
			if s, ok := d.str(v, "apiVersion"); ok && s.Value != APIVersion {
				d.ds.errorf(CodeInvalidValue, s.Pos, "apiVersion must be %q, not %q", APIVersion, s.Value)
			}
		},
		"kind": func(_, v *yaml.Node) {
			if s, ok := d.str(v, "kind"); ok && s.Value != KindPolicy {
				d.ds.errorf(CodeInvalidValue, s.Pos, "kind must be %q, %q or %q, not %q", KindPolicy, KindToolClasses, KindOverrides, s.Value)
			}
		},
		"name":        func(_, v *yaml.Node) { p.Name = d.id(v, "policy name") },
		"description": func(_, v *yaml.Node) { p.Description = d.text(v, "description") },
		"enforcement": func(_, v *yaml.Node) { p.Enforcement, p.EnforcementPos = d.enforcement(v) },
		"metadata":    func(_, v *yaml.Node) { p.Metadata = d.metadata(v) },
		"mode": func(_, v *yaml.Node) {
			s, ok := d.str(v, "mode")
			switch {
			case !ok:
			case s.Value == "monitor":
				p.Mode, p.ModePos = ModeMonitor, s.Pos
			case s.Value == "enforce":
				p.Mode, p.ModePos = ModeEnforce, s.Pos
			default:
				d.ds.errorf(CodeInvalidValue, s.Pos, "mode must be enforce or monitor, not %q", s.Value)
			}
		},
		"decision_log": func(_, v *yaml.Node) { p.DecisionLog = d.decisionLog(v) },
		"defaults":     func(_, v *yaml.Node) { d.defaults(v, &p.Defaults) },
		"variables": func(_, v *yaml.Node) {
			items := d.list(v, "variables")
			for _, c := range items {
				p.Variables = append(p.Variables, d.variable(c))
			}
			p.Suppressions = append(p.Suppressions, d.suppressions(items)...)
		},
		"counters": func(_, v *yaml.Node) {
			items := d.list(v, "counters")
			for _, c := range items {
				p.Counters = append(p.Counters, d.counter(c))
			}
			p.Suppressions = append(p.Suppressions, d.suppressions(items)...)
		},
		"rules": func(_, v *yaml.Node) {
			items := d.list(v, "rules")
			for _, c := range items {
				p.Rules = append(p.Rules, d.rule(c))
			}
			p.Suppressions = append(p.Suppressions, d.suppressions(items)...)
		},
	})
	if ok {
		d.require(n, "the policy", "apiVersion", "kind", "name", "rules")
	}
	if p.Defaults.FailurePolicy == FailInherit {
		p.Defaults.FailurePolicy = FailClosed
	}
	d.checkNames(p)
	return p
}

// decisionLog reads a policy's decision_log: {mask: [...]}, each entry an
// argument path (every tool) or {tools: [...], args: [...]}.
func (d *decoder) decisionLog(n *yaml.Node) DecisionLog {
	var dl DecisionLog
	d.fields(n, "decision_log", map[string]func(k, v *yaml.Node){
		"mask": func(_, v *yaml.Node) {
			for _, e := range d.list(v, "decision_log.mask") {
				if e.Kind == yaml.ScalarNode {
					if p, ok := d.maskPath(e); ok {
						dl.Mask = append(dl.Mask, Mask{Pos: p.Pos, Paths: []MaskPath{p}})
					}
					continue
				}
				m := Mask{Pos: d.pos(e)}
				if d.fields(e, "a decision_log.mask entry", map[string]func(k, v *yaml.Node){
					"tools": func(_, v *yaml.Node) { m.Tools = d.toolNames(v, "decision_log.mask tools") },
					"args": func(_, v *yaml.Node) {
						for _, a := range d.list(v, "decision_log.mask args") {
							if p, ok := d.maskPath(a); ok {
								m.Paths = append(m.Paths, p)
							}
						}
					},
				}) {
					d.require(e, "a decision_log.mask entry", "args")
				}
				if len(m.Paths) > 0 {
					dl.Mask = append(dl.Mask, m)
				}
			}
		},
	})
	return dl
}

// toolNames reads a list of tool names or globs (what names the list);
// an invalid glob is reported (invalid_glob) and left out.
func (d *decoder) toolNames(v *yaml.Node, what string) []String {
	var out []String
	for _, t := range d.list(v, what) {
		s, ok := d.str(t, "a tool name")
		if !ok {
			continue
		}
		if s.Value == "" || !doublestar.ValidatePattern(s.Value) {
			d.ds.errorf(CodeInvalidGlob, s.Pos, "tool name %q is not a valid name or glob", s.Value)
			continue
		}
		out = append(out, s)
	}
	return out
}

// maskPath reads one argument path of decision_log.mask.
func (d *decoder) maskPath(n *yaml.Node) (MaskPath, bool) {
	s, ok := d.str(n, "an argument path")
	if !ok {
		return MaskPath{}, false
	}
	segs, err := ParseMaskPath(s.Value)
	if err != nil {
		d.ds.errorf(CodeInvalidMask, s.Pos, "%v", err)
		return MaskPath{}, false
	}
	return MaskPath{String: s, Segments: segs}, true
}

// text reads an optional free-text scalar.
func (d *decoder) text(n *yaml.Node, what string) string {
	s, _ := d.str(n, what)
	return s.Value
}

// metadata reads a policy's or a rule's metadata: a mapping of strings to
// strings (a duplicate key is an error, as everywhere).
func (d *decoder) metadata(n *yaml.Node) map[string]string {
	if n.Kind != yaml.MappingNode {
		d.ds.errorf(CodeWrongType, d.pos(n), "metadata must be a mapping of strings, not %s", kindName(n))
		return nil
	}
	out := map[string]string{}
	seen := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if d.duplicateKey(seen, k) {
			continue
		}
		key, ok := d.str(k, "a metadata key")
		if !ok {
			continue
		}
		if val, ok := d.str(v, fmt.Sprintf("metadata %q", key.Value)); ok {
			out[key.Value] = val.Value
		}
	}
	return out
}

func (d *decoder) failurePolicy(n *yaml.Node) FailurePolicy {
	s, ok := d.str(n, "failure_policy")
	if !ok {
		return FailInherit
	}
	switch s.Value {
	case "closed":
		return FailClosed
	case "open":
		return FailOpen
	}
	d.ds.errorf(CodeInvalidValue, s.Pos, "failure_policy must be closed or open, not %q", s.Value)
	return FailInherit
}

// enforcement reads a policy's or a rule's enforcement. It returns the
// position even of a value it rejects, so that a typo is not mistaken for
// an absent key.
func (d *decoder) enforcement(n *yaml.Node) (Enforcement, Pos) {
	return enumScalar(d, n, "enforcement", CodeInvalidValue, ParseEnforcement)
}

func (d *decoder) verdict(n *yaml.Node) (Verdict, Pos) {
	return enumScalar(d, n, "verdict", CodeInvalidVerdict, ParseVerdict)
}

// enumScalar reads a scalar naming one value of an enumeration, reporting
// a value parse rejects as code; it returns the zero value on error, and
// where the scalar is.
func enumScalar[T any](d *decoder, n *yaml.Node, what string, code Code, parse func(string) (T, error)) (T, Pos) {
	var zero T
	s, ok := d.str(n, what)
	if !ok {
		return zero, s.Pos
	}
	v, err := parse(s.Value)
	if err != nil {
		d.ds.errorf(code, s.Pos, "%v", err)
	}
	return v, s.Pos
}

func (d *decoder) defaults(n *yaml.Node, def *Defaults) {
	d.fields(n, "defaults", map[string]func(k, v *yaml.Node){
		"failure_policy": func(_, v *yaml.Node) { def.FailurePolicy = d.failurePolicy(v) },
		"verdict": func(_, v *yaml.Node) {
			def.Verdict, def.VerdictPos = d.verdict(v)
			if def.Verdict == Modify || def.Verdict == Ask {
				d.ds.errorf(CodeInvalidVerdict, def.VerdictPos, "the default verdict must be allow, warn, block or halt: %s needs a rule to say how", def.Verdict)
			}
		},
	})
}

func (d *decoder) variable(n *yaml.Node) Variable {
	var v Variable
	if d.fields(n, "a variable", map[string]func(k, v *yaml.Node){
		"name":       func(_, val *yaml.Node) { v.Name = d.ident(val, "variable name") },
		"expression": func(_, val *yaml.Node) { v.Expr, _ = d.expr(val, "expression") },
	}) {
		d.require(n, "a variable", "name", "expression")
	}
	// Names reserved for the built-in variables and libraries are checked
	// by compile, which knows them (celenv.ReservedNames).
	return v
}

func (d *decoder) counter(n *yaml.Node) Counter {
	c := Counter{Phase: PhaseAfter}
	if d.fields(n, "a counter", map[string]func(k, v *yaml.Node){
		"name": func(_, v *yaml.Node) { c.Name = d.ident(v, "counter name") },
		"scope": func(_, v *yaml.Node) {
			c.Scope, _ = enumScalar(d, v, "scope", CodeInvalidValue, ParseScope)
		},
		"on_store_error": func(_, v *yaml.Node) {
			s, ok := d.str(v, "on_store_error")
			switch {
			case !ok:
			case s.Value == "close":
				c.OnStoreError = StoreErrorClose
			case s.Value == "local":
				c.OnStoreError = StoreErrorLocal
			default:
				d.ds.errorf(CodeInvalidValue, s.Pos, "on_store_error must be close or local, not %q", s.Value)
			}
		},
		"phase": func(_, v *yaml.Node) {
			// A counter counts calls at their decision or after them; a
			// turn's end is no call.
			s, ok := d.str(v, "phase")
			switch {
			case !ok:
			case s.Value == "before":
				c.Phase = PhaseBefore
			case s.Value == "after":
				c.Phase = PhaseAfter
			default:
				d.ds.errorf(CodeInvalidPhase, s.Pos, "phase must be before or after, not %q", s.Value)
			}
		},
		"key":            func(_, v *yaml.Node) { c.Key = d.exprPtr(v, "key") },
		"increment_when": func(_, v *yaml.Node) { c.IncrementWhen, _ = d.expr(v, "increment_when") },
		"reset_when":     func(_, v *yaml.Node) { c.ResetWhen = d.exprPtr(v, "reset_when") },
		"weight":         func(_, v *yaml.Node) { c.Weight = d.exprPtr(v, "weight") },
		"reset": func(_, v *yaml.Node) {
			s, ok := d.str(v, "reset")
			c.ResetPos = d.pos(v)
			switch {
			case !ok:
			case s.Value == "all":
				c.ResetAll = true
			case s.Value == "key":
			default:
				d.ds.errorf(CodeInvalidValue, s.Pos, "reset must be key (reset_when clears this call's key) or all (it clears every key), not %q", s.Value)
			}
		},
		"streak": func(_, v *yaml.Node) { c.Streak = d.exprPtr(v, "streak") },
		"window": func(_, v *yaml.Node) {
			s, ok := d.str(v, "window")
			if !ok {
				return
			}
			w, err := time.ParseDuration(s.Value)
			if err != nil || w <= 0 {
				d.ds.errorf(CodeInvalidDuration, s.Pos, "window must be a positive duration such as 60s or 5m, not %q", s.Value)
				return
			}
			c.Window = w
		},
	}) {
		d.require(n, "a counter", "name", "increment_when")
	}
	if c.Streak != nil && c.Window > 0 {
		d.ds.errorf(CodeInvalidValue, c.Streak.Pos, "counter %s: streak and window cannot be combined: a streak counts consecutive events, a window counts recent ones", c.Name.Value)
	}
	if c.Weight != nil && (c.Window > 0 || c.Streak != nil) {
		d.ds.errorf(CodeInvalidValue, c.Weight.Pos, "counter %s: weight cannot be combined with window or streak, which count events, not amounts", c.Name.Value)
	}
	if c.ResetAll && c.ResetWhen == nil {
		d.ds.errorf(CodeMissingField, c.ResetPos, "counter %s: reset: all says what reset_when clears, and the counter has no reset_when", c.Name.Value)
	}
	return c
}

// phase decodes a rule's or a counter's phase; def stands when the value
// is not a string (reported).
func (d *decoder) phase(v *yaml.Node, def Phase) Phase {
	s, ok := d.str(v, "phase")
	if !ok {
		return def
	}
	ph, err := ParsePhase(s.Value)
	if err != nil {
		d.ds.errorf(CodeInvalidPhase, s.Pos, "%v", err)
	}
	return ph
}

func (d *decoder) rule(n *yaml.Node) Rule {
	r := Rule{Pos: d.pos(n)}
	var modifyNode *yaml.Node
	if d.fields(n, "a rule", map[string]func(k, v *yaml.Node){
		"id":          func(_, v *yaml.Node) { r.ID = d.id(v, "rule id") },
		"description": func(_, v *yaml.Node) { r.Description = d.text(v, "description") },
		"priority": func(_, v *yaml.Node) {
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				d.ds.errorf(CodeWrongType, d.pos(v), "priority must be an integer, not %s", kindName(v))
				return
			}
			p, err := strconv.ParseInt(v.Value, 0, 32)
			if err != nil {
				d.ds.errorf(CodeInvalidValue, d.pos(v), "priority %s is out of range (a 32-bit integer)", v.Value)
				return
			}
			r.Priority = int(p)
		},
		"phase": func(_, v *yaml.Node) { r.Phase = d.phase(v, PhaseBefore) },
		"match": func(_, v *yaml.Node) {
			d.fields(v, "match", map[string]func(k, v *yaml.Node){
				"classes": func(_, v *yaml.Node) {
					for _, c := range d.list(v, "match.classes") {
						if s := d.ident(c, "a tool class"); s.Value != "" {
							r.Classes = append(r.Classes, s)
						}
					}
				},
				"tools": func(_, v *yaml.Node) { r.Tools = append(r.Tools, d.toolNames(v, "match.tools")...) },
			})
		},
		"condition":      func(_, v *yaml.Node) { r.Condition = d.exprPtr(v, "condition") },
		"verdict":        func(_, v *yaml.Node) { r.Verdict, r.VerdictPos = d.verdict(v) },
		"reason":         func(_, v *yaml.Node) { r.Reason = d.text(v, "reason") },
		"message":        func(_, v *yaml.Node) { r.Message = d.exprPtr(v, "message") },
		"code":           func(_, v *yaml.Node) { r.Code = d.text(v, "code") },
		"failure_policy": func(_, v *yaml.Node) { r.FailurePolicy = d.failurePolicy(v) },
		"modify":         func(_, v *yaml.Node) { modifyNode = v },
		"enforcement":    func(_, v *yaml.Node) { r.Enforcement, r.EnforcementPos = d.enforcement(v) },
		"metadata":       func(_, v *yaml.Node) { r.Metadata = d.metadata(v) },
		"judge":          func(_, v *yaml.Node) { r.Judge, r.JudgePos = d.text(v, "judge"), d.pos(v) },
		"labels":         func(_, v *yaml.Node) { r.Labels, r.LabelsPos = d.labels(v), d.pos(v) },
		"writes":         func(_, v *yaml.Node) { r.Writes = d.exprPtr(v, "writes") },
	}) {
		d.require(n, "a rule", "id", "verdict")
	}
	if modifyNode != nil {
		r.Modify = d.modify(modifyNode)
	}
	d.checkRule(&r)
	return r
}

// labels decodes a rule's labels: {add: [label, ...]}, each label a CEL
// identifier of at most MaxLabelLen bytes.
func (d *decoder) labels(n *yaml.Node) []String {
	var out []String
	if d.fields(n, "labels", map[string]func(k, v *yaml.Node){
		"add": func(_, v *yaml.Node) {
			for _, c := range d.list(v, "labels.add") {
				s := d.ident(c, "a label")
				switch {
				case s.Value == "":
				case len(s.Value) > MaxLabelLen:
					d.ds.errorf(CodeInvalidValue, s.Pos, "label %q is longer than %d bytes", s.Value, MaxLabelLen)
				default:
					out = append(out, s)
				}
			}
		},
	}) {
		d.require(n, "labels", "add")
	}
	return out
}

func (d *decoder) modify(n *yaml.Node) *ModifySpec {
	m := &ModifySpec{Pos: d.pos(n)}
	d.fields(n, "modify", map[string]func(k, v *yaml.Node){
		"args":     func(_, v *yaml.Node) { m.Args = d.exprPtr(v, "modify.args") },
		"content":  func(_, v *yaml.Node) { m.Content = d.exprPtr(v, "modify.content") },
		"messages": func(_, v *yaml.Node) { m.Messages = d.exprPtr(v, "modify.messages") },
		"output":   func(_, v *yaml.Node) { m.Output = d.exprPtr(v, "modify.output") },
		"description": func(_, v *yaml.Node) {
			m.Description = d.exprPtr(v, "modify.description")
		},
		"set": func(_, v *yaml.Node) {
			if v.Kind != yaml.MappingNode {
				d.ds.errorf(CodeWrongType, d.pos(v), "modify.set must be a mapping of argument names to CEL expressions, not %s", kindName(v))
				return
			}
			seen := map[string]Pos{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, val := v.Content[i], resolve(v.Content[i+1])
				key, ok := d.str(k, "an argument name")
				if !ok || d.duplicateKey(seen, k) {
					continue
				}
				if e, ok := d.expr(val, fmt.Sprintf("modify.set.%s", key.Value)); ok {
					m.Set = append(m.Set, SetArg{Key: key, Expr: e})
				}
			}
		},
		"unset": func(_, v *yaml.Node) {
			for _, c := range d.list(v, "modify.unset") {
				if s, ok := d.str(c, "an argument name"); ok {
					m.Unset = append(m.Unset, s)
				}
			}
		},
	})
	return m
}

// checkRule reports the combinations of fields that are each valid alone but
// make no sense together.
func (d *decoder) checkRule(r *Rule) {
	switch {
	case r.Judge != "" && r.Verdict != Ask:
		d.ds.errorf(CodeInvalidValue, r.JudgePos, "judge needs verdict: ask: a judge settles an ask, and when it cannot, the rule asks (this rule's verdict is %s)", r.Verdict)
	case r.Judge != "" && !judgeName().MatchString(r.Judge):
		d.ds.errorf(CodeInvalidValue, r.JudgePos, "judge %q must be a name of letters, digits, '-' and '_'", r.Judge)
	}
	if r.LabelsPos.Line > 0 {
		switch {
		case r.Phase != PhaseBefore && r.Phase != PhaseAfter && r.Phase != PhaseResource:
			d.ds.errorf(CodeInvalidValue, r.LabelsPos, "labels are added by a rule that decides a call (phase before or after) or a resource read (phase resource), not in phase %s", r.Phase)
		case r.Verdict != Allow && r.Verdict != Warn && r.Verdict != Ask && r.Verdict != VerdictUnspecified:
			d.ds.errorf(CodeInvalidValue, r.LabelsPos, "labels are added when the rule lets the call run or asks (allow, warn or ask), and this rule's verdict is %s: the call it refuses never runs", r.Verdict)
		}
	}
	if r.Writes != nil && r.Phase != PhaseBefore {
		d.ds.errorf(CodeInvalidValue, r.Writes.Pos, "writes names the files a call writes, so it is read before the call (phase before), not in phase %s", r.Phase)
	}
	if r.Verdict == Ask && r.Phase == PhaseAfter {
		d.ds.errorf(CodeVerdictPhase, r.VerdictPos, "ask cannot be used in the after phase: the tool has already run; use block or warn")
	}
	switch r.Phase {
	case PhaseTurnEnd:
		d.checkTurnEnd(r)
	case PhaseInput, PhaseOutput:
		d.checkModelPhase(r)
	case PhaseTools:
		d.checkToolsPhase(r)
	case PhaseResource:
		d.checkResourcePhase(r)
	}
	switch {
	case r.Modify != nil && r.Verdict != Modify && r.Verdict != VerdictUnspecified:
		d.ds.errorf(CodeModifyMismatch, r.Modify.Pos, "a modify block needs verdict: modify, but this rule's verdict is %s", r.Verdict)
	case r.Modify == nil && r.Verdict == Modify:
		d.ds.errorf(CodeModifyMismatch, r.VerdictPos, "verdict modify needs a modify block saying what to rewrite (args, set, unset, content, messages, output or description)")
	}
	m := r.Modify
	if m == nil {
		return
	}
	if m.Args == nil && len(m.Set) == 0 && len(m.Unset) == 0 && m.Content == nil && m.Messages == nil && m.Output == nil && m.Description == nil {
		d.ds.errorf(CodeModifyMismatch, m.Pos, "the modify block rewrites nothing: give args, set, unset, content, messages, output or description")
	}
	d.checkModifyPhase(r.Phase, m)
}

// checkModifyPhase reports the modify fields phase cannot apply: before
// the call args, set and unset; after it content; in the input phase
// messages; in the output phase output.
func (d *decoder) checkModifyPhase(phase Phase, m *ModifySpec) {
	type field struct {
		name   string
		pos    Pos
		phase  Phase
		needed string
	}
	var fs []field
	if m.Args != nil {
		fs = append(fs, field{"args", m.Args.Pos, PhaseBefore, "rewrites the call's arguments"})
	}
	if len(m.Set) > 0 {
		fs = append(fs, field{"set", m.Set[0].Key.Pos, PhaseBefore, "rewrites the call's arguments"})
	}
	if len(m.Unset) > 0 {
		fs = append(fs, field{"unset", m.Unset[0].Pos, PhaseBefore, "rewrites the call's arguments"})
	}
	if m.Content != nil {
		fs = append(fs, field{"content", m.Content.Pos, PhaseAfter, "rewrites a result"})
	}
	if m.Messages != nil {
		fs = append(fs, field{"messages", m.Messages.Pos, PhaseInput, "rewrites the messages sent to the model"})
	}
	if m.Output != nil {
		fs = append(fs, field{"output", m.Output.Pos, PhaseOutput, "rewrites the model's output"})
	}
	if m.Description != nil {
		fs = append(fs, field{"description", m.Description.Pos, PhaseTools, "rewrites the description of a tool the client is shown"})
	}
	for _, f := range fs {
		if f.phase != phase {
			d.ds.errorf(CodeModifyPhase, f.pos, "modify.%s %s and needs phase: %s; in the %s phase rewrite %s", f.name, f.needed, f.phase, phase, modifyFieldsOf(phase))
		}
	}
}

// modifyFieldsOf names what a modify rule of phase rewrites, with which
// fields.
func modifyFieldsOf(phase Phase) string {
	switch phase {
	case PhaseAfter:
		return "the result with content"
	case PhaseInput:
		return "the messages with messages"
	case PhaseOutput:
		return "the output with output"
	case PhaseTurnEnd:
		return "nothing (a turn_end rule reports)"
	case PhaseTools:
		return "the tool's description with description"
	case PhaseResource:
		return "nothing (a resource rule allows, blocks, asks or halts the read)"
	}
	return "the arguments with args, set or unset"
}

// checkModelPhase reports what an input or output rule cannot do: it
// decides on the model's messages or output, not a tool call, so it names
// no tool, and nobody is there to approve (no ask).
func (d *decoder) checkModelPhase(r *Rule) {
	if r.Verdict == Ask {
		d.ds.errorf(CodeVerdictPhase, r.VerdictPos, "ask cannot be used in the %s phase: nobody approves a model's %s; use block, halt, warn or modify", r.Phase, map[Phase]string{PhaseInput: "input", PhaseOutput: "output"}[r.Phase])
	}
	if len(r.Tools) > 0 || len(r.Classes) > 0 {
		pos := r.Tools
		if len(pos) == 0 {
			pos = r.Classes
		}
		d.ds.errorf(CodeVerdictPhase, pos[0].Pos, "an %s rule has no call, so it cannot match tools or classes; remove match", r.Phase)
	}
}

// checkToolsPhase reports what a tools rule cannot do: it decides whether
// a client is shown a tool (allow, warn), hides it (block: the tool is
// also refused if called) or rewrites its description (modify); nothing
// runs, so nobody is asked and nothing halts.
func (d *decoder) checkToolsPhase(r *Rule) {
	switch r.Verdict {
	case Allow, Warn, Block, Modify, VerdictUnspecified:
	default:
		d.ds.errorf(CodeVerdictPhase, r.VerdictPos, "%s cannot be used in the tools phase: a tools rule shows a tool (allow, warn), hides it (block) or rewrites its description (modify); nothing runs yet, so nobody is asked and nothing halts", r.Verdict)
	}
}

// checkResourcePhase reports what a resource rule cannot do: it decides a
// read of a resource or a prompt, which has no tool to match and no
// arguments to rewrite.
func (d *decoder) checkResourcePhase(r *Rule) {
	if r.Verdict == Modify {
		d.ds.errorf(CodeVerdictPhase, r.VerdictPos, "modify cannot be used in the resource phase: a read has no arguments to rewrite; use allow, warn, block, ask or halt")
	}
	if len(r.Tools) > 0 || len(r.Classes) > 0 {
		pos := r.Tools
		if len(pos) == 0 {
			pos = r.Classes
		}
		d.ds.errorf(CodeVerdictPhase, pos[0].Pos, "a resource rule decides a read of a resource or a prompt, not a tool call, so it cannot match tools or classes; remove match and read resource.server, resource.uri or resource.name in the condition")
	}
}

// checkTurnEnd reports what a turn_end rule cannot do: the turn is over,
// so it reports (allow or warn) and names no tool.
func (d *decoder) checkTurnEnd(r *Rule) {
	switch r.Verdict {
	case Allow, Warn, VerdictUnspecified:
	default:
		d.ds.errorf(CodeVerdictPhase, r.VerdictPos, "%s cannot be used in the turn_end phase: the turn is over, a turn_end rule reports; use warn (or allow)", r.Verdict)
	}
	if len(r.Tools) > 0 || len(r.Classes) > 0 {
		pos := r.Tools
		if len(pos) == 0 {
			pos = r.Classes
		}
		d.ds.errorf(CodeVerdictPhase, pos[0].Pos, "a turn_end rule has no call, so it cannot match tools or classes; remove match")
	}
}

// checkNames reports variables and counters that share a name in one policy.
func (d *decoder) checkNames(p *Policy) {
	seen := map[string]Pos{}
	for _, v := range p.Variables {
		d.dup(seen, "variable", v.Name)
	}
	seen = map[string]Pos{}
	for _, c := range p.Counters {
		d.dup(seen, "counter", c.Name)
	}
}

func (d *decoder) dup(seen map[string]Pos, what string, s String) {
	if s.Value == "" {
		return
	}
	if first, ok := seen[s.Value]; ok {
		d.ds = append(d.ds, Diagnostic{Code: CodeDuplicateName, Severity: SeverityError, Pos: s.Pos, Related: []Pos{first},
			Message: fmt.Sprintf("%s %q is already declared at %d:%d", what, s.Value, first.Line, first.Col)})
		return
	}
	seen[s.Value] = s.Pos
}
