package mcpproxy

import (
	"context"
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
// decided again. Without elicitation the request is refused as the hooks
// refuse an ask on a host that cannot ask: with the approval request the
// engine recorded in sess (celguard.Config.ApprovalRequests) and the
// command that approves it (Config.ApproveCommand); the identical request
// made again after the approval runs.
func (p *Proxy) ask(ctx context.Context, ss *mcp.ServerSession, sess *eval.Session, responses mcp.InputResponseMap, gotState, what, subject string, payload any, d eval.Decision) approval {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil || ss.InitializeParams().Capabilities.Elicitation == nil {
		return approval{refused: p.approvalRefusal(sess.ID(), what, d)}
	}
	state := p.bind(ss, subject, d.RuleID, payload)
	if resp, ok := responses[approvalInput]; ok {
		if gotState != state {
			return approval{refused: message(d) + ". The approval answered was for another request, so celguard refused this " + what}
		}
		// The user answered here: the request recorded for a person to
		// answer later is answered too, and leaves the inbox.
		if d.Approval != nil && d.Approval.Request != "" {
			if _, err := sess.Revoke(ctx, d.Approval.Request); err != nil {
				p.log.Warn("the answered approval request could not be removed", "request", d.Approval.Request, "error", err)
			}
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

// approvalRefusal is the refusal of an ask the client cannot put to its
// user: with a pending request, it names the request and the command a
// person runs to approve it, and says what the agent should tell the user.
func (p *Proxy) approvalRefusal(session, what string, d eval.Decision) string {
	head := message(d) + ". This " + what + " needs a person's approval and this MCP client cannot ask for it (it declares no elicitation), so celguard refused it"
	if d.Approval == nil || d.Approval.Request == "" {
		if p.cfg.NoApprovals != "" {
			return head + ", and " + p.cfg.NoApprovals
		}
		return head + ", and no approval can let it run from inside this session (the rule is mandatory, or this proxy keeps no requests for approval): do not make it again; tell the user that celguard needs a person for it."
	}
	cmd := "celguard approve"
	if p.cfg.ApproveCommand != nil {
		cmd = p.cfg.ApproveCommand(session)
	}
	id := d.Approval.Request
	every := "every " + what + " of this server"
	if what == "call" && d.Tool != "" {
		every = "every call of " + d.Tool
	}
	return fmt.Sprintf("%s as approval request %s. Tell the user: \"celguard asks your approval for this %s. To approve this exact %s once, run in your own terminal: %s %s "+
		"(or with --session to approve %s that rule %s asks about, for the rest of this session).\" "+
		"When the user says it is approved, make the identical %s again; a different one is asked again. "+
		"Do not run %s yourself: it refuses inside an agent's tool call.",
		head, id, what, what, cmd, id, every, d.RuleID, what, cmd)
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
