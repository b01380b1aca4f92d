package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/celguard/celguard/eval"
)

// approveServer is `celguard approve ID --server URL --session-id ID`: it
// answers a request that celguard serve recorded, through the server's
// approval routes with the approver token, after showing the call (read
// from the server) and asking as the local command does. The refusals
// (agent environment, no terminal, agent parent) ran before it.
func approveServer(ctx context.Context, p approveParams, fail func(string, ...any) int) int {
	if p.sessionID == "" || p.tokenFile == "" {
		return fail("--server needs --session-id (the session the refusal names) and --approver-token-file (the server's approver token)")
	}
	token, err := readTokenFlag("--approver-token-file", p.tokenFile)
	if err != nil {
		return fail("%v", err)
	}
	client, base, err := forwardClient(p.server)
	if err != nil {
		return fail("%v", err)
	}
	route := base + "/v1/sessions/" + url.PathEscape(p.sessionID) + "/approvals"
	call := func(method string, body any, out any) error {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, route, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
				return fmt.Errorf("the server refused (%s, HTTP %d): %s", e.Error.Code, resp.StatusCode, e.Error.Message)
			}
			return fmt.Errorf("the server answered HTTP %d: %s", resp.StatusCode, firstLine(b))
		}
		return json.Unmarshal(b, out)
	}
	scope := eval.ScopeOnce
	switch {
	case p.session:
		scope = eval.ScopeSession
	case p.always:
		// The server refuses it with its reason (always_refused): a
		// persistent approval is a rule file written locally.
		scope = eval.ScopeAlways
	}
	var req *eval.Request
	if scope != eval.ScopeAlways {
		var list struct {
			Requests []eval.Request `json:"requests"`
		}
		if err := call(http.MethodGet, nil, &list); err != nil {
			return fail("%v", err)
		}
		for i := range list.Requests {
			if list.Requests[i].ID == p.id {
				req = &list.Requests[i]
			}
		}
		if req == nil {
			return fail("session %s on %s has no pending request %s (no_such_request): it was answered, expired, or belongs to another session", p.sessionID, p.server, p.id)
		}
		what := "this exact call, once"
		if scope == eval.ScopeSession {
			what = fmt.Sprintf("every %s call rule %s asks about, for the rest of session %s", req.Tool, req.Rule, p.sessionID)
		}
		ok, err := p.confirm(*req, "session "+p.sessionID+" on "+p.server, what)
		if err != nil {
			return fail("%v", err)
		}
		if !ok {
			return exitFindings
		}
	}
	var got struct {
		Grant eval.Grant `json:"grant"`
	}
	if err := call(http.MethodPost, map[string]string{"request_id": p.id, "scope": string(scope)}, &got); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(p.stdout, "\nApproved %s on %s: scope %s, rule %s, %s. Tell the agent to run the call again.\n",
		p.id, p.server, got.Grant.Scope, got.Grant.Rule, got.Grant.Summary)
	return exitOK
}
