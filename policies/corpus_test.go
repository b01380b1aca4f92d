package policies_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// The corpus (issue 15, point 7): hostile and benign tool calls, written as
// families (a template crossed with lists of programs, paths and tools) in
// testdata/corpus/*.yaml, decided by the recommended bundle through the
// path `celguard eval` takes (package celguard's Load with the layers, asks
// deferred) and through the hook of every host. The test fails when fewer
// than 98% of the hostile calls are handled (blocked or asked; blocked where
// the family promises a block) or more than 2% of the benign calls are asked
// or blocked, on any host dialect, and when the misses it keeps are not
// exactly the ones docs/policies.md lists under what the bundle cannot
// catch. -corpus.v prints every miss.

var corpusVerbose = flag.Bool("corpus.v", false, "print every corpus miss and the figures per dialect")

// corpusHome and corpusWork are the home directory and workspace the corpus
// is decided in.
const (
	corpusHome = "/home/dev"
	corpusWork = "/home/dev/app"
)

// corpusFamily is one family of the corpus: its calls are the template with
// every combination of the vars' values substituted for {name}.
type corpusFamily struct {
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
}

// corpusCase is one call of the corpus.
type corpusCase struct {
	family *corpusFamily
	call   map[string]any
	label  string
}

func loadCorpus(t *testing.T) (hostile, benign []corpusCase) {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var fams []*corpusFamily
		require.NoError(t, yaml.Unmarshal(data, &fams), f)
		for _, fam := range fams {
			require.NotEmpty(t, fam.Family, "%s: a family without a name", f)
			require.NotEmpty(t, fam.Source, "%s: family %s has no source", f, fam.Family)
			require.Contains(t, []string{"block", "handled", "allow"}, fam.Want, "%s: family %s", f, fam.Family)
			require.Contains(t, []string{"shell", "read", "write", "edit", "patch", "fetch", "search", "mcp", "tool"}, fam.Kind, "%s: family %s", f, fam.Family)
			for _, c := range expand(fam) {
				if fam.Want == "allow" {
					benign = append(benign, c)
				} else {
					hostile = append(hostile, c)
				}
			}
		}
	}
	return hostile, benign
}

var varRef = regexp.MustCompile(`\{([a-z_]+)\}`)

// expand crosses the family's vars (in name order) and substitutes each
// combination into the call.
func expand(fam *corpusFamily) []corpusCase {
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
	out := make([]corpusCase, 0, len(combos))
	for _, c := range combos {
		var call map[string]any
		// A value may hold another var's reference: substitute until
		// nothing changes (bounded).
		v := any(fam.Call)
		for range 3 {
			v = substitute(v, c)
		}
		call = unpack(fam.Kind, v.(map[string]any))
		out = append(out, corpusCase{family: fam, call: call, label: label(fam, call)})
	}
	return out
}

func substitute(v any, vars map[string]string) any {
	switch x := v.(type) {
	case string:
		return varRef.ReplaceAllStringFunc(x, func(m string) string {
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
func unpack(kind string, call map[string]any) map[string]any {
	switch kind {
	case "mcp":
		if parts := strings.SplitN(str(call, "server"), "|", 3); len(parts) == 3 {
			var a map[string]any
			if err := json.Unmarshal([]byte(parts[2]), &a); err != nil {
				panic(fmt.Sprintf("corpus: %s: %v", parts[2], err))
			}
			return map[string]any{"server": parts[0], "tool": parts[1], "args": a}
		}
	case "tool":
		if parts := strings.SplitN(str(call, "tool"), "|", 2); len(parts) == 2 {
			var a map[string]any
			if err := json.Unmarshal([]byte(parts[1]), &a); err != nil {
				panic(fmt.Sprintf("corpus: %s: %v", parts[1], err))
			}
			return map[string]any{"tool": parts[0], "args": a}
		}
	}
	return call
}

func label(fam *corpusFamily, call map[string]any) string {
	b, _ := json.Marshal(call)
	return fam.Family + " " + string(b)
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

// dialects are the ways a call reaches the bundle: celguard eval (with
// Claude Code's tool names) and each host's hook.
var dialects = []string{"eval", "claude-code", "codex", "gemini", "cursor"}

// toolCall is the tool name and arguments of a host-neutral call in a
// dialect; ok is false when the host has no tool of that kind.
func toolCall(dialect string, c corpusCase) (tool string, args map[string]any, ok bool) {
	call := c.call
	p, content := str(call, "path"), str(call, "content")
	switch c.family.Kind {
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
		switch c.family.Kind {
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
		switch c.family.Kind {
		case "shell":
			return "Bash", map[string]any{"command": str(call, "command")}, true
		case "patch":
			return "apply_patch", map[string]any{"command": str(call, "patch")}, true
		}
	case "gemini":
		switch c.family.Kind {
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
		switch c.family.Kind {
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

// payload is the hook event of a call for a host.
func payload(host string, c corpusCase, cwd, session string) ([]byte, bool) {
	tool, args, ok := toolCall(host, c)
	if !ok {
		return nil, false
	}
	var ev map[string]any
	switch host {
	case "claude-code", "codex":
		ev = map[string]any{"session_id": session, "transcript_path": nil, "cwd": cwd, "permission_mode": "default",
			"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": args, "tool_use_id": "toolu_1"}
		if host == "codex" {
			ev["turn_id"] = "turn-1"
		}
	case "gemini":
		ev = map[string]any{"session_id": session, "transcript_path": "/tmp/t.json", "cwd": cwd,
			"timestamp": "2026-01-15T10:30:00.000Z", "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": args}
	case "cursor":
		ev = map[string]any{"conversation_id": session, "generation_id": "g", "workspace_roots": []any{cwd}, "cwd": cwd}
		switch c.family.Kind {
		case "shell":
			ev["hook_event_name"], ev["command"] = "beforeShellExecution", args["command"]
		case "read":
			ev["hook_event_name"], ev["file_path"], ev["content"] = "beforeReadFile", args["file_path"], ""
		case "tool", "write":
			// The agent's own tools reach the hook by preToolUse.
			ev["hook_event_name"], ev["tool_name"], ev["tool_input"] = "preToolUse", tool, args
		default:
			in, _ := json.Marshal(args)
			ev["hook_event_name"], ev["tool_name"], ev["tool_input"] = "beforeMCPExecution", tool, string(in)
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return b, true
}

// outcome is what became of a call: allow, ask or block.
type outcome string

// hookOutcome reads a host's answer. A deny that says the host cannot ask
// is an ask the host turned into a block.
func hookOutcome(host string, r hooks.Response) outcome {
	if r.Exit == 2 {
		return "block"
	}
	var m map[string]any
	if len(strings.TrimSpace(string(r.Stdout))) > 0 {
		if err := json.Unmarshal(r.Stdout, &m); err != nil {
			return "block"
		}
	}
	asked := func(reason string) outcome {
		if strings.Contains(reason, "cannot ask for it") {
			return "ask"
		}
		return "block"
	}
	switch host {
	case "claude-code", "codex":
		hso, _ := m["hookSpecificOutput"].(map[string]any)
		reason, _ := hso["permissionDecisionReason"].(string)
		switch hso["permissionDecision"] {
		case "deny":
			return asked(reason)
		case "ask":
			return "ask"
		}
		if m["decision"] == "block" {
			return "block"
		}
	case "gemini":
		reason, _ := m["reason"].(string)
		if m["decision"] == "deny" || m["decision"] == "block" {
			return asked(reason)
		}
	case "cursor":
		switch m["permission"] {
		case "deny":
			msg, _ := m["user_message"].(string)
			return asked(msg)
		case "ask":
			return "ask"
		}
	}
	return "allow"
}

func evalOutcome(d eval.Decision) outcome {
	switch d.Verdict {
	case policy.Allow, policy.Warn:
		return "allow"
	case policy.Ask:
		return "ask"
	}
	if d.Code == "approval_required" {
		return "ask"
	}
	return "block"
}

// good says whether the outcome is what the family wants.
func good(want string, o outcome) bool {
	switch want {
	case "allow":
		return o == "allow"
	case "block":
		return o == "block"
	}
	return o != "allow"
}

var deferAll = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Defer}, nil
})

func TestCorpus(t *testing.T) {
	t.Setenv("HOME", corpusHome)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	hostile, benign := loadCorpus(t)
	require.GreaterOrEqual(t, len(hostile), 600, "hostile calls")
	require.GreaterOrEqual(t, len(benign), 400, "benign calls")

	ctx := context.Background()
	guard, err := celguard.Load(ctx, celguard.WithUserDir("-"), celguard.WithProjectDir("-"), celguard.WithApprover(deferAll))
	require.NoError(t, err)

	type tally struct{ total, good int }
	type result struct{ hostile, benign tally }
	results := map[string]*result{}
	missed := map[string][]string{} // known miss -> labels
	var unexpected []string
	runners := map[string]*hooks.Runner{}
	for _, d := range dialects[1:] {
		h, err := hooks.New(d, hooks.Options{})
		require.NoError(t, err)
		// The hook's engine keeps its sessions in the state directory
		// through the file store, as `celguard hook` builds it.
		sd := &statedir.Dir{Dir: t.TempDir()}
		hg, err := celguard.Load(ctx, celguard.WithUserDir("-"), celguard.WithProjectDir("-"), celguard.WithApprover(deferAll), celguard.WithStore(store.NewFileDir(sd)))
		require.NoError(t, err)
		runners[d] = &hooks.Runner{Host: h, Store: sd, Engine: func() (*eval.Engine, error) { return hg.Engine(), nil }}
	}
	// Per family, on the eval dialect: calls and calls decided as wanted
	// (printed with -corpus.v).
	type famTally struct {
		want        string
		total, good int
	}
	families := map[string]*famTally{}
	seq := 0
	decide := func(dialect string, c corpusCase) (outcome, bool) {
		cwd := c.family.Cwd
		if cwd == "" {
			cwd = corpusWork
		}
		if dialect == "eval" {
			tool, args, _ := toolCall(dialect, c)
			d, err := guard.NewSession("corpus", nil).Before(ctx, eval.Call{Tool: tool, Args: args, Cwd: cwd})
			if err != nil {
				return "block", true
			}
			return evalOutcome(d), true
		}
		// A session per call: no call's counters (rate limits, loops)
		// decide another's.
		seq++
		in, ok := payload(dialect, c, cwd, fmt.Sprintf("corpus-%d", seq))
		if !ok {
			return "", false
		}
		return hookOutcome(dialect, runners[dialect].Run(ctx, in)), true
	}
	for _, dialect := range dialects {
		res := &result{}
		results[dialect] = res
		for _, set := range [][]corpusCase{hostile, benign} {
			for _, c := range set {
				o, ok := decide(dialect, c)
				if !ok {
					continue
				}
				tl := &res.hostile
				if c.family.Want == "allow" {
					tl = &res.benign
				}
				tl.total++
				if dialect == "eval" {
					ft := families[c.family.Family]
					if ft == nil {
						ft = &famTally{want: c.family.Want}
						families[c.family.Family] = ft
					}
					ft.total++
					if good(c.family.Want, o) {
						ft.good++
					}
				}
				if good(c.family.Want, o) {
					tl.good++
					continue
				}
				line := fmt.Sprintf("%s: %s: got %s, want %s", dialect, c.label, o, c.family.Want)
				if len(c.family.Known) == 0 {
					unexpected = append(unexpected, line)
				}
				for _, k := range c.family.Known {
					missed[k] = append(missed[k], line)
				}
				if *corpusVerbose {
					t.Log(line)
				}
			}
		}
	}
	if *corpusVerbose {
		names := make([]string, 0, len(families))
		for n := range families {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			f := families[n]
			t.Logf("family %-40s want %-7s %d/%d as wanted", n, f.want, f.good, f.total)
		}
	}
	for _, dialect := range dialects {
		r := results[dialect]
		handled := 100 * float64(r.hostile.good) / float64(max(r.hostile.total, 1))
		flagged := 100 * float64(r.benign.total-r.benign.good) / float64(max(r.benign.total, 1))
		t.Logf("%-12s hostile handled %d/%d (%.1f%%), benign asked or blocked %d/%d (%.1f%%)",
			dialect, r.hostile.good, r.hostile.total, handled, r.benign.total-r.benign.good, r.benign.total, flagged)
		if handled < 98 {
			t.Errorf("%s: %.1f%% of the hostile calls handled, want at least 98%%", dialect, handled)
		}
		if flagged > 2 {
			t.Errorf("%s: %.1f%% of the benign calls asked or blocked, want at most 2%%", dialect, flagged)
		}
	}
	if len(unexpected) > 0 {
		n := min(len(unexpected), 60)
		t.Errorf("%d corpus calls decided wrongly (mark a kept miss with known: and list it in docs/policies.md):\n%s",
			len(unexpected), strings.Join(unexpected[:n], "\n"))
	}
	// Every kept miss is listed in docs/policies.md, and every listed one
	// still misses.
	doc, err := os.ReadFile("../docs/policies.md")
	require.NoError(t, err)
	listed := knownMisses(string(doc))
	var kept []string
	for k := range missed {
		kept = append(kept, k)
	}
	sort.Strings(kept)
	for _, k := range kept {
		if !slices.Contains(listed, k) {
			t.Errorf("the corpus keeps the miss %q, which docs/policies.md does not list under what the bundle cannot catch", k)
		}
	}
	for _, k := range listed {
		if !slices.Contains(kept, k) {
			t.Errorf("docs/policies.md lists the miss %q, which the corpus no longer shows: remove it", k)
		}
	}
}

// knownMisses reads the ids of the corpus misses docs/policies.md lists:
// the lines "- `corpus:ID` ..." of its section on what the bundle cannot
// catch.
func knownMisses(doc string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?m)^- `corpus:([a-z0-9-]+)`").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}
