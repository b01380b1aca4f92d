package main

import (
	"context"
	"fmt"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/serve/client"
)

// operatorClient is the serve client of `--server URL
// --approver-token-file FILE`: the operator's token, read from its file.
func operatorClient(server, tokenFile string) (*client.Client, error) {
	token, err := readTokenFlag("--approver-token-file", tokenFile)
	if err != nil {
		return nil, err
	}
	return client.New(server, token)
}

// approveServer is `celguard approve ID --server URL --session-id ID`: it
// answers a request that celguard serve recorded, through the server's
// approval routes with the operator token, after showing the call (read
// from the server) and asking as the local command does. The refusals
// (agent environment, no terminal, agent parent) ran before it.
func approveServer(ctx context.Context, p approveParams, fail func(string, ...any) int) int {
	if p.sessionID == "" || p.tokenFile == "" {
		return fail("--server needs --session-id (the session the refusal names) and --approver-token-file (the server's operator token)")
	}
	c, err := operatorClient(p.server, p.tokenFile)
	if err != nil {
		return fail("%v", err)
	}
	scope := eval.GrantOnce
	switch {
	case p.session:
		scope = eval.GrantSession
	case p.always:
		// The server refuses it with its reason (always_refused): a
		// persistent approval is a rule file written locally.
		scope = eval.GrantAlways
	}
	if scope != eval.GrantAlways {
		list, err := c.Approvals(ctx, p.sessionID)
		if err != nil {
			return fail("%v", err)
		}
		var req *eval.PendingRequest
		for i := range list.Requests {
			if list.Requests[i].ID == p.id {
				req = &list.Requests[i]
			}
		}
		if req == nil {
			return fail("session %s on %s has no pending request %s (no_such_request): it was answered, expired, or belongs to another session", p.sessionID, p.server, p.id)
		}
		what := "this exact call, once"
		if scope == eval.GrantSession {
			what = fmt.Sprintf("every %s call rule %s asks about, for the rest of session %s", req.Tool, req.Rule, p.sessionID)
		}
		ok, err := p.confirm(decisionlog.MaskRequest(*req, nil), "session "+p.sessionID+" on "+p.server, what)
		if err != nil {
			return fail("%v", err)
		}
		if !ok {
			return exitFindings
		}
	}
	got, err := c.Approve(ctx, p.sessionID, p.id, scope)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(p.stdout, "\nApproved %s on %s: scope %s, rule %s, %s. Tell the agent to run the call again.\n",
		p.id, p.server, got.Grant.Scope, got.Grant.Rule, got.Grant.Summary)
	return exitOK
}

// denyServer is `celguard approve ID --deny --server URL --session-id ID`:
// the denial goes to the server's denial route (POST
// /v1/sessions/{id}/denials) with the operator token, naming the user for
// the server's decision log. The server answers a request answered already
// 409 stale_request and an unknown one 404 no_such_request.
func denyServer(ctx context.Context, p approveParams, fail func(string, ...any) int) int {
	if p.sessionID == "" || p.tokenFile == "" {
		return fail("--server needs --session-id (the session the refusal names) and --approver-token-file (the server's operator token)")
	}
	c, err := operatorClient(p.server, p.tokenFile)
	if err != nil {
		return fail("%v", err)
	}
	got, err := c.Deny(ctx, p.sessionID, p.id, p.note, userName(), "")
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(p.stdout, "Denied %s on %s: %s is refused for the rest of session %s%s.\n",
		p.id, p.server, decisionlog.MaskRequest(got.Request, nil).Summary, p.sessionID, noteSaid(got.Denial.Note))
	return exitOK
}
