package replay

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
)

// Gemini CLI's saved chat, derived from the records Gemini CLI 0.61.0
// writes (testdata/hosts/gemini): a first line {sessionId, projectHash,
// startTime, ...}, then one message a line ({id, timestamp, type,
// content}) or an update {"$set": {...}} (whose messages, when present,
// are read as message lines). A message is written again, with the same
// id, as it grows: a "gemini" message gains its toolCalls, each with the
// call's id, name and args, its result (functionResponse.response) and its
// status, so each call is read once, the first time it appears with a
// status. A "user" message with text is a prompt (a new turn; the chat
// records no turn end, so a turn ends at the next prompt and at the end of
// the file); its functionResponse parts repeat the results. The chat keeps
// no working directory, and it keeps the arguments as the call ran them:
// after a hook's rewrite, the rewritten ones. A call refused by a hook has
// status "error" and the error "Tool execution blocked: ...". Other
// message types (info, error, warning) are notices; an unknown type is an
// error.

type geminiRecord struct {
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	ID          string          `json:"id"`
	Timestamp   time.Time       `json:"timestamp"`
	Type        string          `json:"type"`
	Content     json.RawMessage `json:"content"`
	ToolCalls   []geminiCall    `json:"toolCalls"`
	Set         *struct {
		Messages []json.RawMessage `json:"messages"`
	} `json:"$set"`
}

type geminiCall struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Args   map[string]any `json:"args"`
	Status string         `json:"status"`
	Result []struct {
		FunctionResponse *struct {
			Response any `json:"response"`
		} `json:"functionResponse"`
	} `json:"result"`
	Timestamp time.Time `json:"timestamp"`
}

// geminiBlocked starts the error Gemini CLI records for a call a
// BeforeTool hook refused.
const geminiBlocked = "Tool execution blocked:"

func newGeminiReader(l *lines) *lineReader {
	r := &lineReader{l: l}
	var session string
	inTurn := false
	seen := map[string]bool{} // call ids read
	var last Event            // the position and time of the last record
	endTurn := func(at Event) {
		if inTurn {
			at.Kind = TurnEnd
			r.q.push(at)
			inTurn = false
		}
	}
	r.atEOF = func() { endTurn(last) }
	message := func(rec geminiRecord, line int) error {
		base := Event{Pos: Pos{l.name, line}, Host: hooks.Gemini, Session: session, Time: rec.Timestamp}
		last = base
		switch rec.Type {
		case "user":
			var parts []struct {
				Text *string `json:"text"`
			}
			var text string
			if json.Unmarshal(rec.Content, &text) != nil {
				if err := json.Unmarshal(rec.Content, &parts); err != nil {
					return l.errorf(line, CodeInvalidRecord, "a user message's content must be a string or an array of parts")
				}
			}
			var prompt []string
			if text != "" {
				prompt = append(prompt, text)
			}
			for _, p := range parts {
				if p.Text != nil {
					prompt = append(prompt, *p.Text)
				}
			}
			joined := strings.Join(prompt, "\n")
			if len(prompt) == 0 || strings.HasPrefix(joined, "<session_context>") {
				return nil
			}
			endTurn(base)
			base.Kind, base.Messages = TurnStart, []eval.Message{{Role: "user", Content: joined}}
			r.q.push(base)
			inTurn = true
		case "gemini":
			for _, c := range rec.ToolCalls {
				if c.Status == "" || seen[c.ID] {
					continue
				}
				if c.ID == "" || c.Name == "" {
					return l.errorf(line, CodeInvalidRecord, "a tool call without an id or name")
				}
				seen[c.ID] = true
				call := eval.Call{Tool: c.Name, Args: c.Args, ID: c.ID}
				ev := base
				ev.Kind, ev.Call = Before, call
				r.q.push(ev)
				var resp any
				for _, res := range c.Result {
					if res.FunctionResponse != nil {
						resp = res.FunctionResponse.Response
					}
				}
				ev.Kind, ev.Result = After, hooks.ResultOf(resp)
				if !c.Timestamp.IsZero() {
					ev.Time = c.Timestamp
				}
				switch {
				case c.Status == "cancelled":
					ev.NotRun = "cancelled"
				case c.Status == "error" && strings.HasPrefix(ev.Result.Content, geminiBlocked):
					ev.NotRun = ev.Result.Content
				case c.Status == "error":
					ev.Result.IsError = true
				}
				if m, ok := resp.(map[string]any); ok {
					if e, ok := m["error"].(string); ok && strings.HasPrefix(e, geminiBlocked) {
						ev.NotRun = e
					}
				}
				r.q.push(ev)
			}
		case "info", "error", "warning":
		default:
			return l.errorf(line, CodeUnknownRecord, "unknown message type %q", rec.Type)
		}
		return nil
	}
	r.decode = func(b []byte, line int) error {
		var rec geminiRecord
		if e := l.object(b, line, &rec); e != nil {
			return e
		}
		switch {
		case rec.Set != nil:
			for _, raw := range rec.Set.Messages {
				var m geminiRecord
				if err := json.Unmarshal(raw, &m); err != nil {
					return l.errorf(line, CodeInvalidRecord, "a $set message is not a message object")
				}
				if err := message(m, line); err != nil {
					return err
				}
			}
			return nil
		case rec.ProjectHash != "" && rec.Type == "":
			session = rec.SessionID
			return nil
		case rec.Type == "":
			return l.errorf(line, CodeUnknownRecord, `a chat record that is neither a message (no "type"), an update ("$set") nor the session's header`)
		}
		if session == "" {
			return l.errorf(line, CodeInvalidRecord, "a message before the header line that names the session")
		}
		return message(rec, line)
	}
	return r
}
