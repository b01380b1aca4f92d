package mcpproxy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/eval"
)

// approvalInput is the id of the proxy's elicitation in a request's input
// requests (MCP multi round-trip requests, SEP-2322).
const approvalInput = "celguard-approval"

// approval is how an ask verdict is settled: refused (a message for the
// client), or put to the user (requests, with the state that binds the
// answer to this request), or neither: the request proceeds.
type approval struct {
	refused  string
	requests mcp.InputRequestMap
	state    string
}

// ask settles an ask verdict d on what (a tools/call, a resource read, a
// prompt), bound to subject (the tool's or the read's name) and payload
// (its arguments). When the client declares elicitation, the proxy answers
// the request with an input request (an elicitation the SDK turns into a
// separate elicitation/create for clients on protocol versions before
// 2026-07-28) whose request state binds it to this request; the client's
// retry carries the user's answer (responses, state), and the request
// runs only if the user accepted and the state matches the request
// decided again. Without elicitation the request is refused.
func (p *Proxy) ask(ss *mcp.ServerSession, responses mcp.InputResponseMap, gotState, what, subject string, payload any, d eval.Decision) approval {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil || ss.InitializeParams().Capabilities.Elicitation == nil {
		why := message(d) + ". This " + what + " needs a person's approval and this MCP client cannot be asked (it declares no elicitation), so celguard refused it"
		if d.Approval != nil && d.Approval.Request != "" {
			why += " as approval request " + d.Approval.Request
		}
		return approval{refused: why}
	}
	state := p.bind(ss, subject, d.RuleID, payload)
	if resp, ok := responses[approvalInput]; ok {
		if gotState != state {
			return approval{refused: message(d) + ". The approval answered was for another request, so celguard refused this " + what}
		}
		if er, ok := resp.(*mcp.ElicitResult); ok && er.Action == "accept" && er.Content["approve"] == true {
			return approval{}
		}
		return approval{refused: message(d) + ". The user did not approve this " + what}
	}
	return approval{
		requests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
			Message: message(d) + ". Allow this " + what + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "description": "allow this one " + what}}, "required": []string{"approve"}},
		}},
		state: state,
	}
}

// bind is the request state of an approval: an HMAC, under the proxy's
// own key, of the client connection, the subject, the rule that asked and
// the payload.
func (p *Proxy) bind(ss *mcp.ServerSession, subject, rule string, payload any) string {
	b, _ := json.Marshal(payload) // map keys sorted: canonical
	m := hmac.New(sha256.New, p.key[:])
	fmt.Fprintf(m, "%p\x00%s\x00%s\x00", ss, subject, rule)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}
