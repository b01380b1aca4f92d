package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/celguard/celguard/stdlib"
)

// masker masks the parts of one record, remembering what it masked.
type masker struct {
	paths []MaskedPath
	// hidden are the string values masked by a policy, to be cut out of
	// free text (reason, error) too.
	hidden []string
}

// args returns a masked copy of args: the values under masks replaced,
// then the credentials in every string redacted.
func (m *masker) args(prefix string, args map[string]any, masks [][]string) map[string]any {
	out, _ := copyJSON(args).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for _, path := range masks {
		m.maskPath(out, path, prefix)
	}
	m.redactAll(out, prefix)
	return out
}

// maskPath replaces the values of v under path (relative to at) with the
// mask, recording each.
func (m *masker) maskPath(v any, path []string, at string) {
	if len(path) == 0 {
		return
	}
	set := func(get func() any, put func(any), where string) {
		if len(path) == 1 {
			x := get()
			if s, ok := x.(string); ok && s == maskedValue {
				return
			}
			m.collect(x)
			put(maskedValue)
			m.paths = append(m.paths, MaskedPath{Path: where, By: "policy"})
			return
		}
		m.maskPath(get(), path[1:], where)
	}
	switch x := v.(type) {
	case map[string]any:
		keys := []string{path[0]}
		if path[0] == "*" {
			keys = slices.Sorted(maps.Keys(x))
		}
		for _, k := range keys {
			if _, ok := x[k]; !ok {
				continue
			}
			set(func() any { return x[k] }, func(nv any) { x[k] = nv }, at+"."+k)
		}
	case []any:
		for i := range x {
			if path[0] != "*" && path[0] != fmt.Sprint(i) {
				continue
			}
			set(func() any { return x[i] }, func(nv any) { x[i] = nv }, fmt.Sprintf("%s.%d", at, i))
		}
	}
}

// collect remembers the strings of a masked value (at least 4 bytes long,
// so that masking a flag does not eat the reason), to cut them out of free
// text.
func (m *masker) collect(v any) {
	switch x := v.(type) {
	case string:
		if len(x) >= 4 {
			m.hidden = append(m.hidden, x)
		}
	case float64, int, int64, json.Number:
		if s := fmt.Sprint(x); len(s) >= 4 {
			m.hidden = append(m.hidden, s)
		}
	case map[string]any:
		for _, e := range x {
			m.collect(e)
		}
	case []any:
		for _, e := range x {
			m.collect(e)
		}
	}
}

// redactAll redacts the credentials in every string of v (keys too) and
// bounds each string, in place.
func (m *masker) redactAll(v any, at string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e := x[k]
			nk := k
			if r := stdlib.RedactSecrets(k); r != k {
				nk = r
				m.paths = append(m.paths, MaskedPath{Path: at + "." + r, By: "secret"})
				delete(x, k)
			}
			if s, ok := e.(string); ok {
				x[nk] = m.text(at+"."+nk, s)
				continue
			}
			x[nk] = e
			m.redactAll(e, at+"."+nk)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				x[i] = m.text(fmt.Sprintf("%s.%d", at, i), s)
				continue
			}
			m.redactAll(e, fmt.Sprintf("%s.%d", at, i))
		}
	}
}

// text is s with its credentials redacted (recorded at path), bounded.
func (m *masker) text(path, s string) string {
	if s == maskedValue {
		return s
	}
	if r := stdlib.RedactSecrets(s); r != s {
		m.paths = append(m.paths, MaskedPath{Path: path, By: "secret"})
		s = r
	}
	return bound(s)
}

// free is free text (a reason, an error, metadata) with every masked value
// cut out and its credentials redacted, bounded.
func (m *masker) free(s string) string {
	if s == "" {
		return s
	}
	// Longest first, so that a value containing another is cut whole.
	hidden := slices.Clone(m.hidden)
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	for _, h := range hidden {
		s = strings.ReplaceAll(s, h, maskedValue)
	}
	return bound(stdlib.RedactSecrets(s))
}

// messages returns the messages with the credentials in their content
// redacted.
func (m *masker) messages(prefix string, ms []Message) []Message {
	if ms == nil {
		return nil
	}
	out := make([]Message, len(ms))
	for i, msg := range ms {
		out[i] = Message{Role: bound(msg.Role), Name: bound(msg.Name), Content: m.text(fmt.Sprintf("%s.%d.content", prefix, i), msg.Content)}
	}
	return out
}

// output returns the output with the credentials in its text and content
// redacted.
func (m *masker) output(prefix string, o *ModelOutput) *ModelOutput {
	if o == nil {
		return nil
	}
	out := &ModelOutput{Text: m.text(prefix+".text", o.Text), Content: copyJSON(o.Content)}
	if s, ok := out.Content.(string); ok {
		out.Content = m.text(prefix+".content", s)
	} else {
		m.redactAll(out.Content, prefix+".content")
	}
	return out
}

// bound cuts s to maxLoggedString bytes on a character boundary, saying
// how much was cut.
func bound(s string) string {
	if len(s) <= maxLoggedString {
		return s
	}
	cut := maxLoggedString
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes cut]", len(s)-cut)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// copyJSON deep-copies JSON data (maps, lists, scalars).
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}
