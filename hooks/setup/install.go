package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/internal/jsonkind"
)

// InstallScope is where a hook configuration is installed.
type InstallScope int

// Install scopes.
const (
	// ScopeProject is the project's settings, under the project directory.
	ScopeProject InstallScope = iota
	// ScopeUser is the user's settings, under the home directory.
	ScopeUser
	// ScopeManaged is the host's managed (administrator) settings, a
	// system file above the user's and the project's that neither the user
	// nor the agent can change (hooks.HostInfo.Managed).
	ScopeManaged
)

// String names the scope as doctor and install print it.
func (s InstallScope) String() string {
	switch s {
	case ScopeProject:
		return "project"
	case ScopeUser:
		return "user"
	case ScopeManaged:
		return "managed"
	}
	return fmt.Sprintf("scope(%d)", int(s))
}

// ErrNoManaged is the error (errors.Is) of SettingsPath for ScopeManaged on
// a host, or a platform, without managed settings celguard can write.
var ErrNoManaged = errors.New("no managed settings")

// ManagedPath is host's managed settings file on the platform goos
// (runtime.GOOS), or an error wrapping ErrNoManaged that says why there is
// none. Gemini CLI's GEMINI_CLI_SYSTEM_SETTINGS_PATH, which the CLI itself
// honours, overrides its path.
func ManagedPath(host, goos string) (string, error) {
	info, err := hooks.LookupHost(host)
	if err != nil {
		return "", err
	}
	if host == hooks.Gemini {
		if p := os.Getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH"); p != "" {
			return p, nil
		}
	}
	if p := info.Managed[goos]; p != "" {
		return p, nil
	}
	if info.ManagedNone != "" {
		return "", fmt.Errorf("%w for %s: %s", ErrNoManaged, info.Title, info.ManagedNone)
	}
	return "", fmt.Errorf("%w for %s on %s", ErrNoManaged, info.Title, goos)
}

// hostConfig is how a host's settings file registers hooks; where the file
// is and which events it registers are the host's HostInfo.
type hostConfig struct {
	// flat: Cursor's {"version": 1, "hooks": {event: [{command}]}};
	// otherwise Claude's {"hooks": {event: [{matcher, hooks: [{type,
	// command, timeout}]}]}}.
	flat bool
	// handler is the extra keys of a new handler (timeout and its unit
	// differ by host).
	handler func(command string) *object
	// commandKey is the handler's key for its command line ("command";
	// Copilot CLI: "bash", its Unix shell command).
	commandKey string
	// plugin: the "settings file" is celguard's plugin, written whole
	// (OpenCode: OpencodePlugin), not a JSON document hooks are merged into.
	plugin bool
}

// key is the handler's key for its command line.
func (hc hostConfig) key() string {
	if hc.commandKey == "" {
		return "command"
	}
	return hc.commandKey
}

// hostConfigs holds the hostConfig of every host of the table.
var hostConfigs = map[string]hostConfig{
	hooks.ClaudeCode: {handler: func(c string) *object { return obj("type", "command", "command", c, "timeout", json.Number("30")) }},
	hooks.Codex:      {handler: func(c string) *object { return obj("type", "command", "command", c, "timeout", json.Number("30")) }},
	hooks.Gemini: {handler: func(c string) *object {
		return obj("name", "celguard", "type", "command", "command", c, "timeout", json.Number("30000"))
	}},
	hooks.Cursor: {flat: true, handler: func(c string) *object { return obj("command", c) }},
	// Copilot CLI: {"version": 1, "hooks": {event: [{type, bash,
	// timeoutSec}]}}.
	hooks.Copilot: {flat: true, commandKey: "bash", handler: func(c string) *object {
		return obj("type", "command", "bash", c, "timeoutSec", json.Number("30"))
	}},
	hooks.OpenCode: {plugin: true},
}

// SettingsPath is the settings file celguard's hooks go into for host:
// under projectDir for ScopeProject, under homeDir for ScopeUser (Codex's
// user settings honour CODEX_HOME), ManagedPath for ScopeManaged.
func SettingsPath(host string, scope InstallScope, projectDir, homeDir string) (string, error) {
	info, err := hooks.LookupHost(host)
	if err != nil {
		return "", err
	}
	if scope == ScopeManaged {
		return ManagedPath(host, runtime.GOOS)
	}
	if scope == ScopeUser {
		dir := info.SettingsDir
		if info.UserSettingsDir != "" {
			dir = info.UserSettingsDir
		}
		if info.HomeEnv != "" {
			if h := os.Getenv(info.HomeEnv); h != "" {
				// $CODEX_HOME is ~/.codex, $COPILOT_HOME ~/.copilot.
				_, rest, _ := strings.Cut(filepath.ToSlash(dir), "/")
				return filepath.Join(h, filepath.FromSlash(rest), info.SettingsFile), nil
			}
		}
		return filepath.Join(homeDir, filepath.FromSlash(dir), info.SettingsFile), nil
	}
	return filepath.Join(projectDir, filepath.FromSlash(info.SettingsDir), info.SettingsFile), nil
}

// HookEvents lists the events celguard registers for on host.
func HookEvents(host string) []string {
	info, _ := hooks.LookupHost(host)
	return info.Events
}

// Install merges a hook running command into a host's settings document
// (empty for a file that does not exist yet) and returns the new document
// and whether anything changed. For OpenCode, whose hooks are plugins, the
// document is celguard's plugin (OpencodePlugin), written whole. Everything else in the document stays as it
// was, in its order: other settings, other hooks, other keys of celguard's
// own entries. A celguard hook for the same host already there (a command
// that runs celguard with "hook HOST") is updated in place, and any second
// one removed, so installing twice changes nothing.
func Install(host string, settings []byte, command string) ([]byte, bool, error) {
	info, err := hooks.LookupHost(host)
	if err != nil {
		return nil, false, err
	}
	hc := hostConfigs[host]
	if hc.plugin {
		return installOpencode(settings, command)
	}
	root := &object{}
	indent := "  "
	if len(bytes.TrimSpace(settings)) > 0 {
		v, err := parseOrdered(settings)
		if err != nil {
			return nil, false, fmt.Errorf("the settings are not valid JSON: %w", err)
		}
		o, ok := v.(*object)
		if !ok {
			return nil, false, fmt.Errorf("the settings must be a JSON object, not %s", orderedKind(v))
		}
		root = o
		indent = detectIndent(settings)
	}
	changed := false
	if hc.flat {
		if _, ok := root.get("version"); !ok {
			root.set("version", json.Number("1"))
			changed = true
		}
	}
	hooksV, ok := root.get("hooks")
	if !ok {
		hooksV = &object{}
		root.set("hooks", hooksV)
		changed = true
	}
	hooksObj, ok := hooksV.(*object)
	if !ok {
		return nil, false, fmt.Errorf(`"hooks" must be an object, not %s`, orderedKind(hooksV))
	}
	for _, event := range info.Events {
		ch, err := installEvent(hc, host, hooksObj, event, command)
		if err != nil {
			return nil, false, fmt.Errorf(`"hooks.%s": %w`, event, err)
		}
		changed = changed || ch
	}
	if !changed {
		return settings, false, nil
	}
	var b bytes.Buffer
	writeOrdered(&b, root, indent, "")
	b.WriteByte('\n')
	return b.Bytes(), true, nil
}

// installEvent puts celguard's handler into one event's list.
func installEvent(hc hostConfig, host string, hooks *object, event, command string) (bool, error) {
	v, ok := hooks.get(event)
	if !ok || v == nil {
		v = []any{}
	}
	list, ok := v.([]any)
	if !ok {
		return false, fmt.Errorf("must be an array, not %s", orderedKind(v))
	}
	found, changed := false, false
	var out []any
	for _, entry := range list {
		if hc.flat {
			h, ok := entry.(*object)
			if !ok || !isOurs(h, host) {
				out = append(out, entry)
				continue
			}
			if found {
				changed = true // a duplicate: dropped
				continue
			}
			found = true
			changed = setCommand(h, hc.key(), command) || changed
			out = append(out, h)
			continue
		}
		group, ok := entry.(*object)
		if !ok {
			out = append(out, entry)
			continue
		}
		hv, _ := group.get("hooks")
		handlers, ok := hv.([]any)
		if !ok {
			out = append(out, entry)
			continue
		}
		var kept []any
		for _, hv := range handlers {
			h, ok := hv.(*object)
			if !ok || !isOurs(h, host) {
				kept = append(kept, hv)
				continue
			}
			if found {
				changed = true
				continue
			}
			found = true
			changed = setCommand(h, hc.key(), command) || changed
			kept = append(kept, h)
		}
		if len(kept) == 0 {
			changed = true // the group held only a duplicate of ours
			continue
		}
		if len(kept) != len(handlers) {
			group.set("hooks", kept)
		}
		out = append(out, group)
	}
	if !found {
		h := hc.handler(command)
		if hc.flat {
			out = append(out, h)
		} else {
			out = append(out, obj("hooks", []any{h}))
		}
		changed = true
	}
	if out == nil {
		out = []any{}
	}
	if changed || !ok {
		hooks.set(event, out)
	}
	return changed, nil
}

// isOurs reports whether a handler runs celguard's hook for host: its
// command (its hostConfig's key) has "hook HOST" after a word that names
// celguard, or is the lean client (LeanName) followed by HOST.
func isOurs(h *object, host string) bool {
	c, _ := h.get(hostConfigs[host].key())
	s, ok := c.(string)
	if !ok {
		return false
	}
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i++ {
		if isLean(strings.Trim(f[i], `"'`)) && strings.Trim(f[i+1], `"'`) == host {
			return true
		}
	}
	for i := 1; i+1 < len(f); i++ {
		if f[i] == "hook" && strings.Trim(f[i+1], `"'`) == host && strings.Contains(strings.Join(f[:i], " "), "celguard") {
			return true
		}
	}
	return false
}

func setCommand(h *object, key, command string) bool {
	if c, _ := h.get(key); c == command {
		return false
	}
	h.set(key, command)
	return true
}

// Diff is a line diff of two documents, every line shown: "-" removed, "+"
// added, " " kept, under ---/+++ headers naming them.
func Diff(oldName, newName string, old, new []byte) string {
	a, b := splitLines(old), splitLines(new)
	// Longest common subsequence, by dynamic programming: settings files
	// are small.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s\n+++ %s\n", oldName, newName)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			s.WriteString(" " + a[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			s.WriteString("+" + b[j] + "\n")
			j++
		default:
			s.WriteString("-" + a[i] + "\n")
			i++
		}
	}
	return s.String()
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// object is a JSON object that keeps its keys' order and, for an object
// parsed from a document, each member's text as written: a member that
// install does not touch is written back exactly so (an inline array stays
// on its line).
type object struct {
	keys []string
	vals map[string]any
	// raw is the text of each parsed member's value; setKeys are the keys
	// set since (their raw text no longer holds).
	raw     map[string][]byte
	setKeys map[string]bool
}

// obj builds an object from key, value pairs.
func obj(kv ...any) *object {
	o := &object{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if o.setKeys == nil {
		o.setKeys = map[string]bool{}
	}
	o.setKeys[k] = true
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// parseOrdered decodes one JSON value, objects as *object, numbers as
// json.Number (kept exactly as written).
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readOrdered(dec, data, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func readOrdered(dec *json.Decoder, data []byte, depth int) (any, error) {
	if depth > 200 {
		return nil, errors.New("nested too deeply")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := &object{vals: map[string]any{}, raw: map[string][]byte{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				start := dec.InputOffset()
				v, err := readOrdered(dec, data, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
				o.raw[k] = bytes.TrimLeft(data[start:dec.InputOffset()], " \t\r\n:")
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := readOrdered(dec, data, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", d)
	}
	return t, nil
}

func orderedKind(v any) string {
	switch v.(type) {
	case *object:
		return "an object"
	}
	return jsonkind.Of(v)
}

// detectIndent returns the indentation of the first indented line, or two
// spaces.
func detectIndent(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}

// touched reports whether anything in v was set since it was parsed.
func touched(v any) bool {
	switch x := v.(type) {
	case *object:
		if len(x.setKeys) > 0 {
			return true
		}
		for _, e := range x.vals {
			if touched(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if touched(e) {
				return true
			}
		}
	}
	return false
}

// writeOrdered writes v as indented JSON; an object's members that were
// not touched since they were parsed keep their text.
func writeOrdered(b *bytes.Buffer, v any, indent, prefix string) {
	switch x := v.(type) {
	case *object:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range x.keys {
			b.WriteString(prefix + indent)
			kb, _ := marshal(k)
			b.Write(kb)
			b.WriteString(": ")
			if raw, ok := x.raw[k]; ok && !x.setKeys[k] && !touched(x.vals[k]) {
				b.Write(raw)
			} else {
				writeOrdered(b, x.vals[k], indent, prefix+indent)
			}
			if i < len(x.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(prefix + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(prefix + indent)
			writeOrdered(b, e, indent, prefix+indent)
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(prefix + "]")
	default:
		eb, err := marshal(x)
		if err != nil {
			eb = []byte("null")
		}
		b.Write(eb)
	}
}

// marshal encodes v as compact JSON without HTML escaping, as a host's own
// settings writer does (< and > stay as written).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
