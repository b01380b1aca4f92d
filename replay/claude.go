package replay

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
)

// Claude Code's project transcript, derived from the records Claude Code
// 2.1.330 writes (testdata/hosts/claude-code): one JSON object a line with
// a "type". An "assistant" record's message holds tool_use blocks (the
// calls: id, name, input, as PreToolUse sends them) and, with stop_reason
// end_turn, ends the turn; a "user" record is a prompt (a turn starts) or
// holds tool_result blocks (the results), with the tool's raw output in
// toolUseResult (what PostToolUse sends as tool_response) and, for a call
// a hook or the user refused, permissionDecision.decision "reject". Every
// other known type is bookkeeping (claudeIgnored); an unknown type is an
// error.

// claudeIgnored are the record types that hold no call, turn or result.
var claudeIgnored = []string{
	"queue-operation", "attachment", "atis-latch", "api-request-shape", "api-request-blob", "api-request",
	"tools-used", "last-prompt", "system", "cost-state", "summary", "file-history-snapshot", "progress",
	"custom-title", "tag", "agent-name", "pr-link", "mode",
}

// claudeRecord is the part of a transcript record replay reads.
type claudeRecord struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"sessionId"`
	Timestamp  time.Time       `json:"timestamp"`
	Cwd        string          `json:"cwd"`
	IsMeta     bool            `json:"isMeta"`
	AgentID    string          `json:"agentId"`
	Message    json.RawMessage `json:"message"`
	ToolResult json.RawMessage `json:"toolUseResult"`
	Permission *struct {
		Decision string `json:"decision"`
		Source   string `json:"source"`
	} `json:"permissionDecision"`
}

type claudeMessage struct {
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeExitCode reads the "Exit code N" a failed Bash call's error
// starts with.
var claudeExitCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Exit code (-?\d+)`) })

func newClaudeReader(l *lines) *lineReader {
	r := &lineReader{l: l}
	calls := map[string]eval.Call{} // tool_use id -> the call, until its result
	r.decode = func(b []byte, line int) error {
		var rec claudeRecord
		if e := l.object(b, line, &rec); e != nil {
			return e
		}
		pos := Pos{l.name, line}
		base := Event{Pos: pos, Host: hooks.ClaudeCode, Session: rec.SessionID, Time: rec.Timestamp}
		switch rec.Type {
		case "assistant", "user":
		case "":
			return l.errorf(line, CodeUnknownRecord, `a transcript record without a "type"`)
		default:
			for _, t := range claudeIgnored {
				if rec.Type == t {
					return nil
				}
			}
			return l.errorf(line, CodeUnknownRecord, "unknown record type %q", rec.Type)
		}
		if rec.SessionID == "" {
			return l.errorf(line, CodeInvalidRecord, "a %s record without a sessionId", rec.Type)
		}
		var msg claudeMessage
		if len(rec.Message) == 0 || json.Unmarshal(rec.Message, &msg) != nil {
			return l.errorf(line, CodeInvalidRecord, "a %s record without a message object", rec.Type)
		}
		var text string
		var blocks []claudeBlock
		if json.Unmarshal(msg.Content, &text) != nil {
			if err := json.Unmarshal(msg.Content, &blocks); err != nil {
				return l.errorf(line, CodeInvalidRecord, "message.content must be a string or an array of blocks")
			}
		}
		if rec.Type == "assistant" {
			for _, bl := range blocks {
				if bl.Type != "tool_use" {
					continue
				}
				if bl.Name == "" || bl.ID == "" {
					return l.errorf(line, CodeInvalidRecord, "a tool_use block without a name or id")
				}
				call := eval.Call{Tool: bl.Name, Args: bl.Input, Cwd: rec.Cwd, ID: bl.ID}
				if rec.AgentID != "" {
					call.Agent.IDs = map[string]string{"agent_id": rec.AgentID}
				}
				calls[bl.ID] = call
				ev := base
				ev.Kind, ev.Call = Before, call
				r.q.push(ev)
			}
			if msg.StopReason == "end_turn" {
				ev := base
				ev.Kind = TurnEnd
				r.q.push(ev)
			}
			return nil
		}
		// A user record: a prompt, or results.
		var prompt []string
		if text != "" {
			prompt = append(prompt, text)
		}
		for _, bl := range blocks {
			switch bl.Type {
			case "text":
				prompt = append(prompt, bl.Text)
			case "tool_result":
				call, ok := calls[bl.ToolUseID]
				if !ok {
					return l.errorf(line, CodeInvalidRecord, "a tool_result for tool_use %q, which no earlier record holds", bl.ToolUseID)
				}
				delete(calls, bl.ToolUseID)
				ev := base
				ev.Kind, ev.Call = After, call
				ev.Result = claudeResult(rec.ToolResult, bl)
				if rec.Permission != nil && rec.Permission.Decision == "reject" {
					ev.NotRun = ev.Result.Content
				}
				r.q.push(ev)
			}
		}
		if len(prompt) > 0 && !rec.IsMeta && len(r.q.evs) == r.q.head {
			ev := base
			ev.Kind = TurnStart
			ev.Messages = []eval.Message{{Role: "user", Content: strings.Join(prompt, "\n")}}
			r.q.push(ev)
		}
		return nil
	}
	return r
}

// claudeResult is the result PostToolUse (or, for a failed call,
// PostToolUseFailure) would have sent: the raw output the record keeps in
// toolUseResult, read as the hooks read tool_response; a failed call's is
// its error text, with the exit code of "Exit code N".
func claudeResult(raw json.RawMessage, bl claudeBlock) eval.Result {
	var resp any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &resp)
	}
	if s, ok := resp.(string); ok && bl.IsError {
		msg := strings.TrimPrefix(s, "Error: ")
		res := eval.Result{IsError: true, Content: msg}
		if g := claudeExitCode().FindStringSubmatch(msg); g != nil {
			if n, err := strconv.Atoi(g[1]); err == nil {
				res.Fields = map[string]any{"exit_code": float64(n)}
			}
		}
		return res
	}
	if resp == nil {
		// No raw output: the text the model read.
		var s string
		if json.Unmarshal(bl.Content, &s) != nil {
			var v any
			_ = json.Unmarshal(bl.Content, &v)
			resp = v
		} else {
			resp = s
		}
	}
	res := hooks.ResultOf(resp)
	res.IsError = res.IsError || bl.IsError
	return res
}
