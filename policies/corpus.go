package policies

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The corpus (docs/policies.md): hostile and benign tool calls the
// recommended bundle is measured against, written as families (a template
// crossed with lists of programs, paths and tools) in testdata/corpus. It is
// embedded so that programs can check a policy change against it at run
// time (`celguard learn` drops every rule that would let a hostile call
// through); the test of the bundle reads it through the same functions.

//go:embed testdata/corpus/*.yaml
var corpusFiles embed.FS

// CorpusHome and CorpusWork are the home directory and the workspace the
// corpus's calls are written for: a call's paths under them stand for the
// user's home and the agent's working directory.
const (
	CorpusHome = "/home/dev"
	CorpusWork = "/home/dev/app"
)

// CorpusFamily is one family of the corpus: its calls are the template
// with every combination of the vars' values substituted for {name}.
type CorpusFamily struct {
	Family string `yaml:"family"`
	Source string `yaml:"source"`
	// Want is block (the bundle promises a block), handled (ask or block)
	// or allow (a benign call: neither asked nor blocked).
	Want string `yaml:"want"`
	// Kind is the host-neutral shape of the call: shell, read, write, edit,
	// patch, fetch, search, mcp or tool (a raw tool name and arguments,
	// the same on every host).
	Kind string              `yaml:"kind"`
	Cwd  string              `yaml:"cwd"`
	Vars map[string][]string `yaml:"vars"`
	// Call holds the kind's fields: command (shell), path and content
	// (read, write, edit), patch, url, pattern/path/glob (search), server,
	// tool and args (mcp), tool and args (tool).
	Call map[string]any `yaml:"call"`
	// Known is the miss the bundle keeps for this family's calls, as
	// docs/policies.md lists it; empty when none is kept.
	Known []string `yaml:"known"`
	// Before are earlier calls of the same session, run (decided before
	// and after, as if approved) ahead of the call judged: a multi-call
	// family (write in one call, run in the next). Each is a map with its
	// own kind, the kind's fields and an optional result (the text the
	// call returned), with the vars substituted.
	Before []map[string]any `yaml:"before"`
}

// Hostile reports whether the family's calls are hostile (want block or
// handled).
func (f *CorpusFamily) Hostile() bool { return f.Want != "allow" }

// CorpusCase is one call of the corpus.
type CorpusCase struct {
	Family *CorpusFamily
	// Fields are the call's host-neutral fields (CorpusFamily.Call with
	// the vars substituted).
	Fields map[string]any
	// Before are the session's earlier calls (CorpusFamily.Before), each
	// a case of its own kind whose Fields may hold a "result" text.
	Before []CorpusCase
	// Label names the call in messages: its family and its fields.
	Label string
}

// CorpusDialects are the ways a corpus call reaches a policy: celguard eval
// (with Claude Code's tool names) and each host's hook.
var CorpusDialects = []string{"eval", "claude-code", "codex", "gemini", "cursor"}

// Corpus reads the embedded corpus and expands every family into its
// calls, hostile and benign, in file and family order.
func Corpus() ([]CorpusCase, error) { return ReadCorpus(corpusFiles, "testdata/corpus") }

// CorpusFS returns the embedded corpus files (testdata/corpus/*.yaml).
func CorpusFS() fs.FS { return corpusFiles }

var corpusKinds = []string{"shell", "read", "write", "edit", "patch", "fetch", "search", "mcp", "tool"}

// ReadCorpus reads the corpus files (*.yaml) of dir in fsys, in name order,
// and expands their families. A family without a name or source, with an
// unknown want or kind, or whose short form does not read, is an error
// naming its file.
func ReadCorpus(fsys fs.FS, dir string) ([]CorpusCase, error) {
	files, err := fs.Glob(fsys, dir+"/*.yaml")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no corpus files in %s", dir)
	}
	sort.Strings(files)
	var out []CorpusCase
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var fams []*CorpusFamily
		if err := yaml.Unmarshal(data, &fams); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, fam := range fams {
			switch {
			case fam.Family == "":
				return nil, fmt.Errorf("%s: a family without a name", f)
			case fam.Source == "":
				return nil, fmt.Errorf("%s: family %s has no source", f, fam.Family)
			case fam.Want != "block" && fam.Want != "handled" && fam.Want != "allow":
				return nil, fmt.Errorf("%s: family %s: want %q is not block, handled or allow", f, fam.Family, fam.Want)
			case !contains(corpusKinds, fam.Kind):
				return nil, fmt.Errorf("%s: family %s: unknown kind %q", f, fam.Family, fam.Kind)
			}
			cases, err := expandFamily(fam)
			if err != nil {
				return nil, fmt.Errorf("%s: family %s: %w", f, fam.Family, err)
			}
			out = append(out, cases...)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var varRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([a-z_]+)\}`) })

// expandFamily crosses the family's vars (in name order) and substitutes
// each combination into the call.
func expandFamily(fam *CorpusFamily) ([]CorpusCase, error) {
	names := make([]string, 0, len(fam.Vars))
	for k := range fam.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	combos := []map[string]string{{}}
	for _, n := range names {
		var next []map[string]string
		for _, c := range combos {
			for _, v := range fam.Vars[n] {
				m := map[string]string{n: v}
				for k, x := range c {
					m[k] = x
				}
				next = append(next, m)
			}
		}
		combos = next
	}
	out := make([]CorpusCase, 0, len(combos))
	for _, c := range combos {
		// A value may hold another var's reference: substitute until
		// nothing changes (bounded).
		v := any(fam.Call)
		for range 3 {
			v = substitute(v, c)
		}
		m, _ := v.(map[string]any)
		call, err := unpack(fam.Kind, m)
		if err != nil {
			return nil, err
		}
		cc := CorpusCase{Family: fam, Fields: call}
		label := ""
		for i, st := range fam.Before {
			v := any(st)
			for range 3 {
				v = substitute(v, c)
			}
			m, _ := v.(map[string]any)
			kind, _ := m["kind"].(string)
			if !contains(corpusKinds, kind) {
				return nil, fmt.Errorf("family %s: before[%d]: unknown kind %q", fam.Family, i, kind)
			}
			fields, err := unpack(kind, m)
			if err != nil {
				return nil, err
			}
			sub := &CorpusFamily{Family: fam.Family, Source: fam.Source, Want: fam.Want, Kind: kind, Cwd: fam.Cwd}
			cc.Before = append(cc.Before, CorpusCase{Family: sub, Fields: fields})
			b, _ := json.Marshal(fields)
			label += string(b) + " then "
		}
		b, _ := json.Marshal(call)
		cc.Label = fam.Family + " " + label + string(b)
		out = append(out, cc)
	}
	return out, nil
}

func substitute(v any, vars map[string]string) any {
	switch x := v.(type) {
	case string:
		return varRef().ReplaceAllStringFunc(x, func(m string) string {
			if s, ok := vars[m[1:len(m)-1]]; ok {
				return s
			}
			return m
		})
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[substitute(k, vars).(string)] = substitute(e, vars)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substitute(e, vars)
		}
		return out
	}
	return v
}

// unpack reads the short form of mcp and tool calls: a tool field
// "server|tool|{json args}" (mcp, in server) or "name|{json args}" (tool).
func unpack(kind string, call map[string]any) (map[string]any, error) {
	switch kind {
	case "mcp":
		if parts := strings.SplitN(str(call, "server"), "|", 3); len(parts) == 3 {
			var a map[string]any
			if err := json.Unmarshal([]byte(parts[2]), &a); err != nil {
				return nil, fmt.Errorf("%s: %w", parts[2], err)
			}
			return map[string]any{"server": parts[0], "tool": parts[1], "args": a}, nil
		}
	case "tool":
		if parts := strings.SplitN(str(call, "tool"), "|", 2); len(parts) == 2 {
			var a map[string]any
			if err := json.Unmarshal([]byte(parts[1]), &a); err != nil {
				return nil, fmt.Errorf("%s: %w", parts[1], err)
			}
			return map[string]any{"tool": parts[0], "args": a}, nil
		}
	}
	if call == nil {
		call = map[string]any{}
	}
	return call, nil
}

func str(call map[string]any, k string) string {
	s, _ := call[k].(string)
	return s
}

func argsOf(call map[string]any) map[string]any {
	if a, ok := call["args"].(map[string]any); ok {
		return a
	}
	return map[string]any{}
}

// Cwd is the working directory the call is decided in: the family's, or
// CorpusWork.
func (c CorpusCase) Cwd() string {
	if c.Family.Cwd != "" {
		return c.Family.Cwd
	}
	return CorpusWork
}

// ToolCall is the tool name and arguments of the call in a dialect (one of
// CorpusDialects); ok is false when the host has no tool of that kind.
func (c CorpusCase) ToolCall(dialect string) (tool string, args map[string]any, ok bool) {
	call := c.Fields
	p, content := str(call, "path"), str(call, "content")
	switch c.Family.Kind {
	case "tool":
		return str(call, "tool"), argsOf(call), true
	case "mcp":
		server, name := str(call, "server"), str(call, "tool")
		switch dialect {
		case "gemini":
			return "mcp_" + server + "_" + name, argsOf(call), true
		case "cursor":
			// beforeMCPExecution names the tool alone.
			return name, argsOf(call), true
		}
		return "mcp__" + server + "__" + name, argsOf(call), true
	}
	switch dialect {
	case "eval", "claude-code":
		switch c.Family.Kind {
		case "shell":
			return "Bash", map[string]any{"command": str(call, "command")}, true
		case "read":
			return "Read", map[string]any{"file_path": p}, true
		case "write":
			return "Write", map[string]any{"file_path": p, "content": content}, true
		case "edit":
			return "Edit", map[string]any{"file_path": p, "old_string": "a", "new_string": content}, true
		case "patch":
			return "apply_patch", map[string]any{"input": str(call, "patch")}, dialect == "eval"
		case "fetch":
			return "WebFetch", map[string]any{"url": str(call, "url"), "prompt": "Summarise the page."}, true
		case "search":
			return "Grep", searchArgs(call, "glob"), true
		}
	case "codex":
		switch c.Family.Kind {
		case "shell":
			return "Bash", map[string]any{"command": str(call, "command")}, true
		case "patch":
			return "apply_patch", map[string]any{"command": str(call, "patch")}, true
		}
	case "gemini":
		switch c.Family.Kind {
		case "shell":
			return "run_shell_command", map[string]any{"command": str(call, "command")}, true
		case "read":
			return "read_file", map[string]any{"absolute_path": p}, true
		case "write":
			return "write_file", map[string]any{"file_path": p, "content": content}, true
		case "edit":
			return "replace", map[string]any{"file_path": p, "old_string": "a", "new_string": content}, true
		case "fetch":
			return "web_fetch", map[string]any{"prompt": "Summarise " + str(call, "url")}, true
		case "search":
			return "search_file_content", searchArgs(call, "include"), true
		}
	case "cursor":
		switch c.Family.Kind {
		case "shell":
			return "Shell", map[string]any{"command": str(call, "command")}, true
		case "read":
			return "Read", map[string]any{"file_path": p}, true
		case "write":
			return "Write", map[string]any{"file_path": p, "content": content}, true
		}
	}
	return "", nil, false
}

// searchArgs are a search tool's arguments: pattern, path, and the glob
// under the host's name for it.
func searchArgs(call map[string]any, globKey string) map[string]any {
	a := map[string]any{"pattern": str(call, "pattern")}
	if p := str(call, "path"); p != "" {
		a["path"] = p
	}
	if g := str(call, "glob"); g != "" {
		a[globKey] = g
	}
	return a
}
