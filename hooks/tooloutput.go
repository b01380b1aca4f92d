package hooks

import (
	"encoding/json"
	"maps"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
)

// Tool outputs come in many shapes: a string, Bash's {stdout, stderr, ...},
// Gemini's {llmContent, returnDisplay, error}, MCP's {content: [{type,
// text}]}, Claude's Read {file: {content}}. Rules see one text, the text the
// model reads, as result.content, and the raw output as result.response. A
// rewrite of result.content is given back in the output's own shape.

// textField says where an output's text lives.
type textField int

const (
	fieldNone      textField = iota // no text: the JSON of the whole output stands in
	fieldWhole                      // the output is a string
	fieldStdout                     // stdout (and stderr) of a shell tool
	fieldLLM                        // Gemini's llmContent (and returnDisplay)
	fieldContent                    // a content string
	fieldBlocks                     // content as MCP text blocks
	fieldFile                       // file.content (Claude's Read)
	fieldOutput                     // an output string
	fieldResult                     // a result string
	fieldTopBlocks                  // the output is an array of MCP text blocks
)

// locate finds the text of an output.
func locate(resp any) (string, textField) {
	switch r := resp.(type) {
	case nil:
		return "", fieldNone
	case string:
		return r, fieldWhole
	case []any:
		if t, ok := blocksText(r); ok {
			return t, fieldTopBlocks
		}
	case map[string]any:
		if s, ok := r["stdout"].(string); ok {
			if e, ok := r["stderr"].(string); ok && e != "" {
				if s == "" {
					return e, fieldStdout
				}
				return s + "\n" + e, fieldStdout
			}
			return s, fieldStdout
		}
		switch v := r["llmContent"].(type) {
		case string:
			return v, fieldLLM
		case []any:
			if t, ok := blocksText(v); ok {
				return t, fieldLLM
			}
		}
		switch v := r["content"].(type) {
		case string:
			return v, fieldContent
		case []any:
			if t, ok := blocksText(v); ok {
				return t, fieldBlocks
			}
		}
		if f, ok := r["file"].(map[string]any); ok {
			if s, ok := f["content"].(string); ok {
				return s, fieldFile
			}
		}
		if s, ok := r["output"].(string); ok {
			return s, fieldOutput
		}
		if s, ok := r["result"].(string); ok {
			return s, fieldResult
		}
	}
	b, err := marshal(resp)
	if err != nil {
		return "", fieldNone
	}
	return string(b), fieldNone
}

// blocksText joins the text of MCP content blocks ({type: "text", text}) or
// Gemini parts (strings or {text}); ok is false when there is no text.
func blocksText(a []any) (string, bool) {
	var parts []string
	for _, el := range a {
		switch e := el.(type) {
		case string:
			parts = append(parts, e)
		case map[string]any:
			if t, ok := e["text"].(string); ok {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

// responseResult builds the eval.Result of an output: its text, whether it
// reports an error, and the raw output as the field "response" (with
// exit_code when the output has one).
// ResultOf is the result rules see (result.content, result.is_error,
// result.exit_code, result.response) for a tool's raw output as a host
// reports it after the call: the hooks' own reading of an after event's
// tool_response, which package replay applies to the outputs the hosts'
// transcripts record.
func ResultOf(resp any) eval.Result { return responseResult(resp) }

func responseResult(resp any) eval.Result {
	text, _ := locate(resp)
	res := eval.Result{IsError: responseIsError(resp), Content: text, Fields: map[string]any{}}
	if resp != nil {
		res.Fields["response"] = resp
	}
	if m, ok := resp.(map[string]any); ok {
		for _, k := range []string{"exit_code", "exitCode"} {
			if n, ok := m[k].(float64); ok {
				res.Fields["exit_code"] = n
				break
			}
		}
	}
	if len(res.Fields) == 0 {
		res.Fields = nil
	}
	return res
}

// responseIsError reads the usual error markers of an output: is_error or
// isError true, success false, a non-zero exit code, a non-empty error.
func responseIsError(resp any) bool {
	m, ok := resp.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"is_error", "isError"} {
		if b, ok := m[k].(bool); ok && b {
			return true
		}
	}
	if b, ok := m["success"].(bool); ok && !b {
		return true
	}
	for _, k := range []string{"exit_code", "exitCode"} {
		if n, ok := m[k].(float64); ok && n != 0 {
			return true
		}
	}
	switch e := m["error"].(type) {
	case nil:
	case string:
		return e != ""
	case bool:
		return e
	default:
		return true
	}
	return false
}

// rewriteResponse returns a copy of resp whose text is content, in resp's
// shape; ok is false when the output has no text field to rewrite and
// content is not JSON of the same shape.
func rewriteResponse(resp any, content string) (any, bool) {
	_, field := locate(resp)
	switch field {
	case fieldWhole:
		return content, true
	case fieldTopBlocks:
		return []any{map[string]any{"type": "text", "text": content}}, true
	case fieldNone:
		var v any
		if err := json.Unmarshal([]byte(content), &v); err != nil {
			return nil, false
		}
		if jsonkind.Of(v) != jsonkind.Of(resp) || resp == nil {
			return nil, false
		}
		return v, true
	}
	m := maps.Clone(resp.(map[string]any))
	switch field {
	case fieldStdout:
		m["stdout"] = content
		if _, ok := m["stderr"].(string); ok {
			m["stderr"] = ""
		}
	case fieldLLM:
		m["llmContent"] = content
		if _, ok := m["returnDisplay"].(string); ok {
			m["returnDisplay"] = content
		}
	case fieldContent:
		m["content"] = content
	case fieldBlocks:
		m["content"] = []any{map[string]any{"type": "text", "text": content}}
	case fieldFile:
		f := maps.Clone(m["file"].(map[string]any))
		f["content"] = content
		m["file"] = f
	case fieldOutput:
		m["output"] = content
	case fieldResult:
		m["result"] = content
	}
	return m, true
}

// withheld returns resp in its own shape with nothing of the original text
// left: every string blanked, and msg where the text was.
func withheld(resp any, msg string) any {
	if _, ok := resp.(string); ok || resp == nil {
		return msg
	}
	blank := blankStrings(resp, 0)
	if _, field := locate(resp); field != fieldNone {
		if r, ok := rewriteResponse(blank, msg); ok {
			return r
		}
	}
	return blank
}

// blankStrings copies v with every string replaced by "".
func blankStrings(v any, depth int) any {
	if depth > 64 {
		return nil
	}
	switch x := v.(type) {
	case string:
		return ""
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = blankStrings(e, depth+1)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = blankStrings(e, depth+1)
		}
		return out
	}
	return v
}
