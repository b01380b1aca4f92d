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

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policies"
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

// corpusHome and corpusWork are the home directory and workspace the
// corpus is decided in.
const (
	corpusHome = policies.CorpusHome
	corpusWork = policies.CorpusWork
)

// corpusCase is one call of the corpus (policies.CorpusCase).
type corpusCase = policies.CorpusCase

func loadCorpus(t *testing.T) (hostile, benign []corpusCase) {
	t.Helper()
	cases, err := policies.Corpus()
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		if c.Family.Hostile() {
			hostile = append(hostile, c)
		} else {
			benign = append(benign, c)
		}
	}
	return hostile, benign
}

// dialects are the ways a call reaches the bundle: celguard eval (with
// Claude Code's tool names) and each host's hook.
var dialects = policies.CorpusDialects

// toolCall is the tool name and arguments of a host-neutral call in a
// dialect; ok is false when the host has no tool of that kind.
func toolCall(dialect string, c corpusCase) (tool string, args map[string]any, ok bool) {
	return c.ToolCall(dialect)
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
		switch c.Family.Kind {
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

// postPayload is the hook event after a call ran (an earlier call of a
// multi-call family), with its result text; ok is false when the host has
// no such event for the call's kind.
func postPayload(host string, c corpusCase, cwd, session string) ([]byte, bool) {
	tool, args, ok := toolCall(host, c)
	if !ok {
		return nil, false
	}
	result, _ := c.Fields["result"].(string)
	var ev map[string]any
	switch host {
	case "claude-code", "codex":
		ev = map[string]any{"session_id": session, "transcript_path": nil, "cwd": cwd, "permission_mode": "default",
			"hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": args, "tool_use_id": "toolu_1",
			"tool_response": map[string]any{"content": result}}
		if host == "codex" {
			ev["turn_id"] = "turn-1"
		}
	case "gemini":
		ev = map[string]any{"session_id": session, "transcript_path": "/tmp/t.json", "cwd": cwd,
			"timestamp": "2026-01-15T10:30:00.000Z", "hook_event_name": "AfterTool", "tool_name": tool, "tool_input": args,
			"tool_response": map[string]any{"llmContent": result}}
	case "cursor":
		ev = map[string]any{"conversation_id": session, "generation_id": "g", "workspace_roots": []any{cwd}, "cwd": cwd}
		switch c.Family.Kind {
		case "shell":
			ev["hook_event_name"], ev["command"], ev["output"] = "afterShellExecution", args["command"], result
		case "read":
			return nil, false
		case "tool", "write":
			ev["hook_event_name"], ev["tool_name"], ev["tool_input"], ev["tool_output"] = "postToolUse", tool, args, result
		default:
			in, _ := json.Marshal(args)
			out, _ := json.Marshal(map[string]any{"content": result})
			ev["hook_event_name"], ev["tool_name"], ev["tool_input"], ev["result_json"] = "afterMCPExecution", tool, string(in), string(out)
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
		cwd := c.Family.Cwd
		if cwd == "" {
			cwd = corpusWork
		}
		if dialect == "eval" {
			s := guard.NewSession("corpus", nil)
			// A multi-call family: the earlier calls run first, decided
			// before and after (as if approved), in the same session.
			for _, st := range c.Before {
				tool, args, _ := toolCall(dialect, st)
				call := eval.Call{Tool: tool, Args: args, Cwd: cwd}
				if _, err := s.Before(ctx, call); err != nil {
					return "block", true
				}
				res, _ := st.Fields["result"].(string)
				if _, err := s.After(ctx, call, eval.Result{Content: res}); err != nil {
					return "block", true
				}
			}
			tool, args, _ := toolCall(dialect, c)
			d, err := s.Before(ctx, eval.Call{Tool: tool, Args: args, Cwd: cwd})
			if err != nil {
				return "block", true
			}
			return evalOutcome(d), true
		}
		// A session per call: no call's counters (rate limits, loops)
		// decide another's.
		seq++
		session := fmt.Sprintf("corpus-%d", seq)
		for _, st := range c.Before {
			pre, ok := payload(dialect, st, cwd, session)
			post, okPost := postPayload(dialect, st, cwd, session)
			if !ok || !okPost {
				return "", false
			}
			runners[dialect].Run(ctx, pre)
			runners[dialect].Run(ctx, post)
		}
		in, ok := payload(dialect, c, cwd, session)
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
				if c.Family.Want == "allow" {
					tl = &res.benign
				}
				tl.total++
				if dialect == "eval" {
					ft := families[c.Family.Family]
					if ft == nil {
						ft = &famTally{want: c.Family.Want}
						families[c.Family.Family] = ft
					}
					ft.total++
					if good(c.Family.Want, o) {
						ft.good++
					}
				}
				if good(c.Family.Want, o) {
					tl.good++
					continue
				}
				line := fmt.Sprintf("%s: %s: got %s, want %s", dialect, c.Label, o, c.Family.Want)
				if len(c.Family.Known) == 0 {
					unexpected = append(unexpected, line)
				}
				for _, k := range c.Family.Known {
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
