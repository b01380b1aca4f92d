package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// This file checks documents against celguard's own JSON Schemas without
// linking a general JSON Schema library into the binary. The library the
// project used (santhosh-tekuri/jsonschema) compiles the metaschemas of five
// drafts in its package init: 1.7 MB and 21,000 allocations, most of the
// instructions every `celguard hook` process ran before deciding anything.
// Package initialisation runs for every linked package, so a lazily built
// compiler cannot avoid that cost; the checks below interpret the subset of
// draft 2020-12 the embedded schemas use (listed in schemaKeywords) and report
// the same error kinds, locations and messages. A schema using any other
// keyword does not compile, so a schema change cannot silently weaken the
// checks, and the library stays the oracle: schemacheck_test.go compares
// both on every corpus file and under fuzzing.

// schemaKeywords are the keywords checkSchema understands; annotations
// (description, title...) are accepted and ignored.
var schemaKeywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$ref": true, "$comment": true,
	"title": true, "description": true, "examples": true, "default": true, "deprecated": true,
	"type": true, "enum": true, "const": true,
	"properties": true, "additionalProperties": true, "required": true,
	"dependentRequired": true, "dependentSchemas": true,
	"items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true,
	"oneOf": true, "anyOf": true,
}

// checkSchema is one compiled (sub)schema.
type checkSchema struct {
	ptr        string // JSON pointer of this schema in its document, "#/$defs/x"
	boolean    *bool
	types      []string
	enum       []any
	hasConst   bool
	constant   any
	ref        string
	refSchema  *checkSchema
	properties map[string]*checkSchema
	additional *checkSchema // nil when absent
	required   []string
	depReq     map[string][]string
	depSchemas map[string]*checkSchema
	items      *checkSchema
	minItems   *int
	maxItems   *int
	minLength  *int
	maxLength  *int
	pattern    *regexp.Regexp
	minimum    *big.Rat
	maximum    *big.Rat
	oneOf      []*checkSchema
	anyOf      []*checkSchema
}

// errKind names a schema error the way diagnostics classify it.
type errKind int

const (
	errGroup errKind = iota
	errReference
	errFalse
	errType
	errConst
	errEnum
	errRequired
	errAdditional
	errDepRequired
	errMinItems
	errMaxItems
	errMinLength
	errMaxLength
	errPattern
	errMinimum
	errMaximum
	errOneOf
	errAnyOf
)

// schemaError is one problem, with the causes of a group, a reference or an
// unmatched oneOf/anyOf.
type schemaError struct {
	Kind             errKind
	InstanceLocation []string
	SchemaURL        string   // "#" + JSON pointer of the schema reporting it
	Props            []string // unknown properties; missing required ones
	Prop             string   // dependentRequired's trigger
	Want             []string // type names
	Got              string   // type name
	Subschemas       []int    // oneOf: the two alternatives that matched
	MinLen           int
	detail           string // the message after "at '...': "
	Causes           []*schemaError
}

// Error renders the error like the library's leaf errors: "at '/x': ...".
func (e *schemaError) Error() string {
	return fmt.Sprintf("at %s: %s", quoteSchema(jsonPtr(e.InstanceLocation)), e.detail)
}

func jsonPtr(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, tok := range loc {
		sb.WriteByte('/')
		sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return sb.String()
}

func quoteSchema(s string) string {
	s = fmt.Sprintf("%q", s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func displayValue(v any) string {
	switch v := v.(type) {
	case string:
		return quoteSchema(v)
	case []any, map[string]any:
		return "value"
	default:
		return fmt.Sprintf("%v", v)
	}
}

// decodeSchemaJSON decodes JSON keeping numbers exact.
func decodeSchemaJSON(src []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// compileCheckSchema compiles a schema document.
func compileCheckSchema(src []byte) (*checkSchema, error) {
	doc, err := decodeSchemaJSON(src)
	if err != nil {
		return nil, err
	}
	c := &schemaCompiler{root: doc, byPtr: map[string]*checkSchema{}}
	s, err := c.compile(doc, "#")
	if err != nil {
		return nil, err
	}
	for _, r := range c.refs {
		target, err := c.resolve(r.ref)
		if err != nil {
			return nil, err
		}
		r.refSchema = target
	}
	return s, nil
}

type schemaCompiler struct {
	root  any
	byPtr map[string]*checkSchema
	refs  []*checkSchema
}

func (c *schemaCompiler) resolve(ref string) (*checkSchema, error) {
	if s, ok := c.byPtr[ref]; ok {
		return s, nil
	}
	if !strings.HasPrefix(ref, "#") {
		return nil, fmt.Errorf("$ref %q: only references inside the document are supported", ref)
	}
	doc := c.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref[1:], "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if doc, ok = m[tok]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return c.compile(doc, ref)
}

func (c *schemaCompiler) compile(doc any, ptr string) (*checkSchema, error) {
	if s, ok := c.byPtr[ptr]; ok {
		return s, nil
	}
	s := &checkSchema{ptr: ptr}
	c.byPtr[ptr] = s
	if b, ok := doc.(bool); ok {
		s.boolean = &b
		return s, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean", ptr)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sub := func(v any, p string) (*checkSchema, error) { return c.compile(v, ptr+"/"+p) }
	subs := func(v any, p string) ([]*checkSchema, error) {
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s/%s must be an array", ptr, p)
		}
		out := make([]*checkSchema, len(l))
		for i, x := range l {
			var err error
			if out[i], err = sub(x, fmt.Sprintf("%s/%d", p, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	strs := func(v any, p string) ([]string, error) {
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s/%s must be an array of strings", ptr, p)
		}
		out := make([]string, len(l))
		for i, x := range l {
			if out[i], ok = x.(string); !ok {
				return nil, fmt.Errorf("%s/%s must be an array of strings", ptr, p)
			}
		}
		return out, nil
	}
	nonNeg := func(v any, p string) (*int, error) {
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil || i < 0 {
			return nil, fmt.Errorf("%s/%s must be a non-negative integer", ptr, p)
		}
		x := int(i)
		return &x, nil
	}
	num := func(v any, p string) (*big.Rat, error) {
		n, ok := v.(json.Number)
		r, ok2 := new(big.Rat).SetString(string(n))
		if !ok || !ok2 {
			return nil, fmt.Errorf("%s/%s must be a number", ptr, p)
		}
		return r, nil
	}
	var err error
	for _, k := range keys {
		v := m[k]
		if !schemaKeywords[k] {
			return nil, fmt.Errorf("%s: keyword %q is not supported by celguard's schema checks", ptr, k)
		}
		switch k {
		case "$defs":
			defs, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s/$defs must be an object", ptr)
			}
			for name, d := range defs {
				if _, err := sub(d, "$defs/"+escapePtr(name)); err != nil {
					return nil, err
				}
			}
		case "$ref":
			ref, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s/$ref must be a string", ptr)
			}
			s.ref = ref
			c.refs = append(c.refs, s)
		case "type":
			switch t := v.(type) {
			case string:
				s.types = []string{t}
			default:
				if s.types, err = strs(v, k); err != nil {
					return nil, err
				}
			}
		case "enum":
			l, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s/enum must be an array", ptr)
			}
			s.enum = l
		case "const":
			s.hasConst, s.constant = true, v
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s/properties must be an object", ptr)
			}
			s.properties = map[string]*checkSchema{}
			for name, p := range props {
				if s.properties[name], err = sub(p, "properties/"+escapePtr(name)); err != nil {
					return nil, err
				}
			}
		case "additionalProperties":
			if s.additional, err = sub(v, k); err != nil {
				return nil, err
			}
		case "required":
			if s.required, err = strs(v, k); err != nil {
				return nil, err
			}
		case "dependentRequired":
			deps, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s/dependentRequired must be an object", ptr)
			}
			s.depReq = map[string][]string{}
			for name, d := range deps {
				if s.depReq[name], err = strs(d, k+"/"+escapePtr(name)); err != nil {
					return nil, err
				}
			}
		case "dependentSchemas":
			deps, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s/dependentSchemas must be an object", ptr)
			}
			s.depSchemas = map[string]*checkSchema{}
			for name, d := range deps {
				if s.depSchemas[name], err = sub(d, k+"/"+escapePtr(name)); err != nil {
					return nil, err
				}
			}
		case "items":
			if s.items, err = sub(v, k); err != nil {
				return nil, err
			}
		case "minItems":
			if s.minItems, err = nonNeg(v, k); err != nil {
				return nil, err
			}
		case "minLength":
			if s.minLength, err = nonNeg(v, k); err != nil {
				return nil, err
			}
		case "maxLength":
			if s.maxLength, err = nonNeg(v, k); err != nil {
				return nil, err
			}
		case "maxItems":
			if s.maxItems, err = nonNeg(v, k); err != nil {
				return nil, err
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s/pattern must be a string", ptr)
			}
			if s.pattern, err = regexp.Compile(p); err != nil {
				return nil, fmt.Errorf("%s/pattern: %v", ptr, err)
			}
		case "minimum":
			if s.minimum, err = num(v, k); err != nil {
				return nil, err
			}
		case "maximum":
			if s.maximum, err = num(v, k); err != nil {
				return nil, err
			}
		case "oneOf":
			if s.oneOf, err = subs(v, k); err != nil {
				return nil, err
			}
		case "anyOf":
			if s.anyOf, err = subs(v, k); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Validate checks v (the JSON data model with json.Number numbers) and
// returns nil or the error tree, rooted like the library's: a group of the
// problems found.
func (s *checkSchema) Validate(v any) *schemaError {
	err := s.validate(v, nil)
	if err == nil {
		return nil
	}
	if err.Kind == errGroup {
		return err
	}
	return &schemaError{Kind: errGroup, SchemaURL: s.ptr, Causes: []*schemaError{err}}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		return "number"
	}
	return "invalid"
}

func isIntegral(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

func schemaEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, ok1 := new(big.Rat).SetString(string(a))
		rb, ok2 := new(big.Rat).SetString(string(b))
		return ok1 && ok2 && ra.Cmp(rb) == 0
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !schemaEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			y, ok := b[k]
			if !ok || !schemaEqual(x, y) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

func (s *checkSchema) newErr(k errKind, loc []string, detail string) *schemaError {
	return &schemaError{Kind: k, InstanceLocation: slices.Clone(loc), SchemaURL: s.ptr, detail: detail}
}

func (s *checkSchema) validate(v any, loc []string) *schemaError {
	if s.boolean != nil {
		if *s.boolean {
			return nil
		}
		return s.newErr(errFalse, loc, "false schema")
	}
	t := jsonType(v)
	if len(s.types) > 0 {
		n, isNum := v.(json.Number)
		if !slices.Contains(s.types, t) && !(isNum && slices.Contains(s.types, "integer") && isIntegral(n)) {
			e := s.newErr(errType, loc, fmt.Sprintf("got %s, want %s", t, strings.Join(s.types, " or ")))
			e.Got, e.Want = t, s.types
			return e
		}
	}
	if s.hasConst && !schemaEqual(v, s.constant) {
		detail := "'const' failed"
		switch s.constant.(type) {
		case []any, map[string]any:
		default:
			detail = "value must be " + displayValue(s.constant)
		}
		return s.newErr(errConst, loc, detail)
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(x any) bool { return schemaEqual(v, x) }) {
		detail := "'enum' failed"
		if !slices.ContainsFunc(s.enum, func(x any) bool {
			switch x.(type) {
			case []any, map[string]any:
				return true
			}
			return false
		}) {
			if len(s.enum) == 1 {
				detail = "value must be " + displayValue(s.enum[0])
			} else {
				want := make([]string, len(s.enum))
				for i, x := range s.enum {
					want[i] = displayValue(x)
				}
				detail = "value must be one of " + strings.Join(want, ", ")
			}
		}
		return s.newErr(errEnum, loc, detail)
	}
	var errs []*schemaError
	add := func(e *schemaError) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if s.refSchema != nil {
		if e := s.refSchema.validate(v, loc); e != nil {
			r := s.newErr(errReference, loc, "validation failed")
			if e.Kind == errGroup {
				r.Causes = e.Causes
			} else {
				r.Causes = []*schemaError{e}
			}
			add(r)
		}
	}
	child := func(tok string) []string { return append(slices.Clone(loc), tok) }
	switch v := v.(type) {
	case map[string]any:
		if missing := findMissing(v, s.required); missing != nil {
			detail := "missing properties " + joinQuotedSchema(missing)
			if len(missing) == 1 {
				detail = "missing property " + quoteSchema(missing[0])
			}
			e := s.newErr(errRequired, loc, detail)
			e.Props = missing
			add(e)
		}
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		slices.Sort(names)
		var unknown []string
		for _, name := range names {
			if p, ok := s.properties[name]; ok {
				add(p.validate(v[name], child(name)))
			} else if s.additional != nil {
				if s.additional.boolean != nil && !*s.additional.boolean {
					unknown = append(unknown, name)
				} else {
					add(s.additional.validate(v[name], child(name)))
				}
			}
		}
		if len(unknown) > 0 {
			e := s.newErr(errAdditional, loc, "additional properties "+joinQuotedSchema(unknown)+" not allowed")
			e.Props = unknown
			add(e)
		}
		for _, name := range sortedKeys(s.depSchemas) {
			if _, ok := v[name]; ok {
				add(s.depSchemas[name].validate(v, loc))
			}
		}
		for _, name := range sortedKeys(s.depReq) {
			if _, ok := v[name]; ok {
				if missing := findMissing(v, s.depReq[name]); missing != nil {
					e := s.newErr(errDepRequired, loc, fmt.Sprintf("properties %s required, if %s exists", joinQuotedSchema(missing), quoteSchema(name)))
					e.Prop, e.Props = name, missing
					add(e)
				}
			}
		}
	case []any:
		if s.minItems != nil && len(v) < *s.minItems {
			add(s.newErr(errMinItems, loc, fmt.Sprintf("minItems: got %d, want %d", len(v), *s.minItems)))
		}
		if s.maxItems != nil && len(v) > *s.maxItems {
			add(s.newErr(errMaxItems, loc, fmt.Sprintf("maxItems: got %d, want %d", len(v), *s.maxItems)))
		}
		if s.items != nil {
			for i, x := range v {
				add(s.items.validate(x, child(fmt.Sprint(i))))
			}
		}
	case string:
		if s.minLength != nil && utf8.RuneCountInString(v) < *s.minLength {
			e := s.newErr(errMinLength, loc, fmt.Sprintf("minLength: got %d, want %d", utf8.RuneCountInString(v), *s.minLength))
			e.MinLen = *s.minLength
			add(e)
		}
		if s.maxLength != nil && utf8.RuneCountInString(v) > *s.maxLength {
			add(s.newErr(errMaxLength, loc, fmt.Sprintf("maxLength: got %d, want %d", utf8.RuneCountInString(v), *s.maxLength)))
		}
		if s.pattern != nil && !s.pattern.MatchString(v) {
			add(s.newErr(errPattern, loc, fmt.Sprintf("%s does not match pattern %s", quoteSchema(v), quoteSchema(s.pattern.String()))))
		}
	case json.Number:
		r, ok := new(big.Rat).SetString(string(v))
		if ok && s.minimum != nil && r.Cmp(s.minimum) < 0 {
			add(s.newErr(errMinimum, loc, fmt.Sprintf("minimum: got %v, want %v", ratFloat(r), ratFloat(s.minimum))))
		}
		if ok && s.maximum != nil && r.Cmp(s.maximum) > 0 {
			add(s.newErr(errMaximum, loc, fmt.Sprintf("maximum: got %v, want %v", ratFloat(r), ratFloat(s.maximum))))
		}
	}
	if len(s.anyOf) > 0 {
		var causes []*schemaError
		matched := false
		for _, alt := range s.anyOf {
			e := alt.validate(v, loc)
			if e == nil {
				matched = true
				break
			}
			causes = append(causes, e)
		}
		if !matched {
			e := s.newErr(errAnyOf, loc, "'anyOf' failed")
			e.Causes = causes
			add(e)
		}
	}
	if len(s.oneOf) > 0 {
		var causes []*schemaError
		matched := -1
		for i, alt := range s.oneOf {
			e := alt.validate(v, loc)
			if e != nil {
				causes = append(causes, e)
				continue
			}
			if matched == -1 {
				matched = i
				continue
			}
			e = s.newErr(errOneOf, loc, fmt.Sprintf("'oneOf' failed, subschemas %d, %d matched", matched, i))
			e.Subschemas = []int{matched, i}
			add(e)
			break
		}
		if matched == -1 {
			e := s.newErr(errOneOf, loc, "'oneOf' failed, none matched")
			e.Causes = causes
			add(e)
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		g := s.newErr(errGroup, loc, "validation failed")
		g.Causes = errs
		return g
	}
}

func ratFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

func findMissing(obj map[string]any, required []string) []string {
	var missing []string
	for _, name := range required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing
}

func joinQuotedSchema(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = quoteSchema(s)
	}
	return strings.Join(q, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
