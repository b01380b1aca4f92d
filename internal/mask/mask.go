// Package mask masks what celguard shows of a tool call, the one way every
// output does: the decision log, the prompt sent to a judge, the approval
// requests `celguard approvals list` prints. Values a trusted policy's
// decision_log.mask names are replaced by "[MASKED]", the credentials the
// secret-redaction patterns find (stdlib.RedactSecrets) in every other
// string (keys too) by "[REDACTED:<kind>]", and a masked value is cut out
// of free text (a reason, an error) built from the arguments. A Masker
// records the paths it masked, never their values.
//
// It sits below the evaluator, which masks what it sends to a judge, and
// is internal: embedders mask through package decisionlog's records.
package mask

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/stdlib"
)

// Masked is what a value a policy masks is replaced with.
const Masked = "[MASKED]"

// Path is one value a Masker masked.
type Path struct {
	Path string `json:"path"`
	// By is "policy" (a decision_log.mask entry) or "secret" (a credential
	// the secret patterns found).
	By string `json:"by"`
}

// Rule is a policy's decision_log.mask entry: the argument paths masked
// for the tools its globs match (every tool when it has none).
type Rule struct {
	Tools []string
	Paths [][]string
}

// For returns the paths the rules mask for tool.
func For(rules []Rule, tool string) [][]string {
	var out [][]string
	for _, lm := range rules {
		applies := len(lm.Tools) == 0
		for _, g := range lm.Tools {
			if ok, _ := doublestar.Match(g, tool); ok {
				applies = true
				break
			}
		}
		if applies {
			out = append(out, lm.Paths...)
		}
	}
	return out
}

// A Masker masks the parts of one output (a decision record, a prompt),
// remembering what it masked. The zero Masker bounds nothing.
type Masker struct {
	// MaxString, when positive, bounds every string masked, in bytes, cut
	// on a character boundary (saying how much was cut).
	MaxString int
	// Paths are the paths masked so far.
	Paths []Path
	// hidden are the string values masked by a policy, to be cut out of
	// free text (reason, error) too.
	hidden []string
}

// Args returns a masked copy of args (at prefix, "args" in a record): the
// values under masks replaced, then the credentials in every string
// redacted.
func (m *Masker) Args(prefix string, args map[string]any, masks [][]string) map[string]any {
	out, _ := CopyJSON(args).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for _, path := range masks {
		m.maskPath(out, path, prefix)
	}
	m.Value(out, prefix)
	return out
}

// maskPath replaces the values of v under path (relative to at) with the
// mask, recording each.
func (m *Masker) maskPath(v any, path []string, at string) {
	if len(path) == 0 {
		return
	}
	set := func(get func() any, put func(any), where string) {
		if len(path) == 1 {
			x := get()
			if s, ok := x.(string); ok && s == Masked {
				return
			}
			m.collect(x)
			put(Masked)
			m.Paths = append(m.Paths, Path{Path: where, By: "policy"})
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
func (m *Masker) collect(v any) {
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

// Value redacts the credentials in every string of v (JSON data at path
// at; keys too) and bounds each string, in place.
func (m *Masker) Value(v any, at string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e := x[k]
			nk := k
			if r := stdlib.RedactSecrets(k); r != k {
				nk = r
				m.Paths = append(m.Paths, Path{Path: at + "." + r, By: "secret"})
				delete(x, k)
			}
			if s, ok := e.(string); ok {
				x[nk] = m.Text(at+"."+nk, s)
				continue
			}
			x[nk] = e
			m.Value(e, at+"."+nk)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				x[i] = m.Text(fmt.Sprintf("%s.%d", at, i), s)
				continue
			}
			m.Value(e, fmt.Sprintf("%s.%d", at, i))
		}
	}
}

// Text is s, a string of the output at path, with its credentials
// redacted (recorded at path), bounded.
func (m *Masker) Text(path, s string) string {
	if s == Masked {
		return s
	}
	if r := stdlib.RedactSecrets(s); r != s {
		m.Paths = append(m.Paths, Path{Path: path, By: "secret"})
		s = r
	}
	return m.Bound(s)
}

// Free is free text (a reason, an error, metadata, a summary) with every
// value masked so far cut out and its credentials redacted, bounded.
func (m *Masker) Free(s string) string {
	if s == "" {
		return s
	}
	// Longest first, so that a value containing another is cut whole.
	hidden := slices.Clone(m.hidden)
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	for _, h := range hidden {
		s = strings.ReplaceAll(s, h, Masked)
	}
	return m.Bound(stdlib.RedactSecrets(s))
}

// Bound cuts s to MaxString bytes on a character boundary, saying how
// much was cut; without a bound it is s.
func (m *Masker) Bound(s string) string {
	if m.MaxString <= 0 || len(s) <= m.MaxString {
		return s
	}
	cut := m.MaxString
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes cut]", len(s)-cut)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// CopyJSON deep-copies JSON data (maps, lists, scalars).
func CopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = CopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CopyJSON(e)
		}
		return out
	}
	return v
}
