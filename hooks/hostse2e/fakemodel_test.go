package hostse2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// fakeModel is a model server on 127.0.0.1 that speaks one host's API: to
// the first requests that offer the shell tool it answers with one call of
// it each, running its commands in order, and to every later request it
// ends the turn with a short text. It records the tool results the host
// sends back, which is what the model reads.
type fakeModel struct {
	t        *testing.T
	commands []string
	// shellTools are the names of the host's shell tool, first match used.
	shellTools []string

	mu sync.Mutex
	// input, when set (CallTool), is the call's input instead of the
	// shell command.
	input map[string]any
	// final is the closing answer's text, streamed one chunk per element
	// (Gemini); nil means finalText in one chunk.
	final    []string
	issued   int // the calls made so far
	requests int
	results  []string // the tool results received, as JSON or text
	log      []string // method, path and body of every request (for failures)
}

// startFakeModel starts the server for api ("anthropic", "gemini" or
// "openai") and returns its base URL; it is stopped at the end of the test.
// The model calls the shell tool once per command, one call per answer.
func startFakeModel(t *testing.T, api string, commands ...string) (*fakeModel, string) {
	t.Helper()
	m := &fakeModel{t: t, commands: commands}
	var h http.HandlerFunc
	switch api {
	case "anthropic":
		m.shellTools = []string{"Bash", "bash"} // Claude Code, Copilot CLI
		h = m.anthropic
	case "gemini":
		m.shellTools = []string{"run_shell_command"}
		h = m.gemini
	case "openai":
		m.shellTools = []string{"exec_command", "shell_command", "shell"}
		h = m.openai
	default:
		t.Fatalf("unknown API %q", api)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m, "http://" + ln.Addr().String()
}

// Results returns the tool results the host sent back to the model.
func (m *fakeModel) Results() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

// Requests is the number of model requests received.
func (m *fakeModel) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

// Log is every request received, for a failure's message.
func (m *fakeModel) Log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.log, "\n")
}

// read decodes a request's JSON body and logs it.
func (m *fakeModel) read(r *http.Request) map[string]any {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.requests++
	entry := r.Method + " " + r.URL.String() + " " + string(body)
	m.log = append(m.log, entry)
	m.mu.Unlock()
	if os.Getenv("CELGUARD_HOSTSE2E_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "fake model: %s\n", entry)
	}
	var v map[string]any
	_ = json.Unmarshal(body, &v)
	return v
}

// CallTool makes the model call tool with input instead of the shell
// tool (Anthropic API only).
func (m *fakeModel) CallTool(tool string, input map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shellTools, m.input = []string{tool}, input
}

// shellTool returns the first of the shell tools in names, or "".
func (m *fakeModel) shellTool(names []string) string {
	m.mu.Lock()
	tools := m.shellTools
	m.mu.Unlock()
	for _, want := range tools {
		for _, n := range names {
			if n == want {
				return n
			}
		}
	}
	return ""
}

// ask returns the command this request is answered with and the call's
// number (1, 2, ...): the next one not yet called, while the request
// offers the shell tool; ok is false when the model ends the turn.
func (m *fakeModel) ask(tool string) (command string, n int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tool == "" || m.issued >= len(m.commands) {
		return "", 0, false
	}
	m.issued++
	return m.commands[m.issued-1], m.issued, true
}

// Issued is the number of calls the model made: fewer than its commands
// when the host ended the turn before asking the model again.
func (m *fakeModel) Issued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.issued
}

func (m *fakeModel) record(result string) {
	m.mu.Lock()
	m.results = append(m.results, result)
	m.mu.Unlock()
}

const finalText = "The command is done."

// sse writes one server-sent event (no event line when name is "").
func sse(w io.Writer, name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func list(v any) []any          { l, _ := v.([]any); return l }
func dict(v any) map[string]any { d, _ := v.(map[string]any); return d }
func str(v any) string          { s, _ := v.(string); return s }

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// anthropic speaks the Anthropic Messages API (POST /v1/messages, streamed
// as server-sent events when the request says "stream": true).
func (m *fakeModel) anthropic(w http.ResponseWriter, r *http.Request) {
	req := m.read(r)
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		_ = json.NewEncoder(w).Encode(map[string]any{"input_tokens": 10})
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	// The tool results of the last user message.
	msgs := list(req["messages"])
	if len(msgs) > 0 {
		for _, c := range list(dict(msgs[len(msgs)-1])["content"]) {
			if b := dict(c); b["type"] == "tool_result" {
				m.record(jsonText(b["content"]) + fmt.Sprintf(" is_error=%v", b["is_error"]))
			}
		}
	}
	var names []string
	for _, tl := range list(req["tools"]) {
		names = append(names, str(dict(tl)["name"]))
	}
	model := str(req["model"])
	var block map[string]any
	stop := "end_turn"
	tool := m.shellTool(names)
	if command, n, ok := m.ask(tool); ok {
		input := map[string]any{"command": command, "description": "Run the e2e command"}
		m.mu.Lock()
		if m.input != nil {
			input = m.input
		}
		m.mu.Unlock()
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_e2e_%d", n), "name": tool, "input": input}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": finalText}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	if stream, _ := req["stream"].(bool); !stream {
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant",
			"model": model, "content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_e2e", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	if block["type"] == "tool_use" {
		input, _ := json.Marshal(block["input"])
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		m.mu.Lock()
		chunks := m.final
		m.mu.Unlock()
		if len(chunks) == 0 {
			chunks = []string{finalText}
		}
		// The closing answer in several deltas (Stream).
		for _, text := range chunks {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": text}})
		}
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// gemini speaks the Gemini API (POST /v1beta/models/MODEL:generateContent,
// :streamGenerateContent?alt=sse, :countTokens).
func (m *fakeModel) gemini(w http.ResponseWriter, r *http.Request) {
	req := m.read(r)
	path := r.URL.Path
	if strings.HasSuffix(path, ":countTokens") {
		_ = json.NewEncoder(w).Encode(map[string]any{"totalTokens": 10})
		return
	}
	if !strings.HasSuffix(path, ":generateContent") && !strings.HasSuffix(path, ":streamGenerateContent") {
		http.NotFound(w, r)
		return
	}
	contents := list(req["contents"])
	if len(contents) > 0 {
		for _, p := range list(dict(contents[len(contents)-1])["parts"]) {
			if fr := dict(dict(p)["functionResponse"]); fr != nil {
				m.record(jsonText(fr["response"]))
			}
		}
	}
	var names []string
	for _, tl := range list(req["tools"]) {
		for _, fd := range list(dict(tl)["functionDeclarations"]) {
			names = append(names, str(dict(fd)["name"]))
		}
	}
	var part map[string]any
	tool := m.shellTool(names)
	if command, _, ok := m.ask(tool); ok {
		args := map[string]any{"command": command, "description": "Run the e2e command"}
		if strings.Contains(command, "celguard-before") {
			// Only a rewrite that replaces the arguments drops it.
			args["dir_path"] = "sub"
		}
		part = map[string]any{"functionCall": map[string]any{"name": tool, "args": args}}
	} else {
		part = map[string]any{"text": finalText}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-flash",
	}
	if strings.HasSuffix(path, ":generateContent") {
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	m.mu.Lock()
	final := m.final
	m.mu.Unlock()
	if part["text"] == nil || len(final) == 0 {
		sse(w, "", resp)
		return
	}
	// The closing answer in several chunks, the finishReason on the last.
	for i, text := range final {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "index": 0}
		if i == len(final)-1 {
			cand["finishReason"] = "STOP"
		}
		sse(w, "", map[string]any{"candidates": []any{cand}, "usageMetadata": resp["usageMetadata"], "modelVersion": resp["modelVersion"]})
	}
}

// Stream makes the closing answer stream as chunks (Gemini, and the
// Anthropic API's text deltas).
func (m *fakeModel) Stream(chunks []string) {
	m.mu.Lock()
	m.final = chunks
	m.mu.Unlock()
}

// openai speaks the OpenAI Responses API (POST /v1/responses, streamed).
func (m *fakeModel) openai(w http.ResponseWriter, r *http.Request) {
	req := m.read(r)
	if r.URL.Path == "/v1/models" {
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{}})
		return
	}
	if r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	input := list(req["input"])
	// The outputs of the calls made since the last model message.
	for i := len(input) - 1; i >= 0; i-- {
		it := dict(input[i])
		if it["type"] == "function_call_output" || it["type"] == "custom_tool_call_output" {
			m.record(jsonText(it["output"]))
			continue
		}
		if it["type"] == "function_call" || it["type"] == "custom_tool_call" {
			continue
		}
		break
	}
	var names []string
	for _, tl := range list(req["tools"]) {
		names = append(names, str(dict(tl)["name"]))
	}
	var item map[string]any
	tool := m.shellTool(names)
	if command, n, ok := m.ask(tool); ok {
		var args any
		switch tool {
		case "exec_command":
			args = map[string]any{"cmd": command}
		case "shell":
			args = map[string]any{"command": []string{"bash", "-lc", command}}
		default:
			args = map[string]any{"command": command}
		}
		a, _ := json.Marshal(args)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_e2e_%d", n), "call_id": fmt.Sprintf("call_e2e_%d", n), "name": tool,
			"arguments": string(a), "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": "msg_e2e", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": finalText, "annotations": []any{}}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_e2e"}})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": "resp_e2e", "usage": map[string]any{"input_tokens": 10, "input_tokens_details": nil,
			"output_tokens": 5, "output_tokens_details": nil, "total_tokens": 15}}})
}
