package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/celguard/celguard/eval"
)

// The approval routes let a person (or the tool they use) answer the asks
// of a session: list its pending requests and grants, approve a request
// once or for the session, revoke a grant. They are the Operator's
// (Config.OperatorToken), never the agents' token, so that an agent on
// the same machine, which can reach a loopback server and may hold the
// decision token, cannot approve its own requests. A persistent approval
// (scope "always") is refused here: it is written as a reviewed rule file
// by `celguard approve --always` on the user's machine. With a state store
// every change is committed through it (eval.Session.Approve), so every
// replica honours it. No approval lifts a mandatory rule.

// approvalsAnswer is the answer of GET /v1/sessions/{id}/approvals.
type approvalsAnswer struct {
	SessionID string                `json:"session_id"`
	Requests  []eval.PendingRequest `json:"requests"`
	Grants    []eval.Grant          `json:"grants"`
}

// approveRequest is the body of POST /v1/sessions/{id}/approvals.
type approveRequest struct {
	RequestID string `json:"request_id"`
	Scope     string `json:"scope"`
}

// approveAnswer is the answer of POST /v1/sessions/{id}/approvals.
type approveAnswer struct {
	Grant   eval.Grant          `json:"grant"`
	Request eval.PendingRequest `json:"request"`
}

// approvedBy is the Grant.By of an approval given over HTTP.
const approvedBy = "celguard serve (approver token)"

// allApprovalsAnswer is the answer of GET /v1/approvals: one entry per
// session with a pending request or a grant.
type allApprovalsAnswer struct {
	Sessions []approvalsAnswer `json:"sessions"`
}

// listAllApprovals lists the pending requests and grants of every session
// this server holds (with a store, each read afresh from it), so that the
// person approving need not know the session id. A session another replica
// holds alone is not listed: ask that replica, or name the session.
func (s *Server) listAllApprovals(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	out := allApprovalsAnswer{Sessions: []approvalsAnswer{}}
	for _, sess := range s.sessions.all() {
		if err := sess.Sync(ctx); err != nil {
			s.storeFailed(w, fmt.Errorf("%s: %w", eval.CodeStoreUnavailable, err))
			return
		}
		reqs, grants := sess.Requests(), sess.Grants()
		if len(reqs) == 0 && len(grants) == 0 {
			continue
		}
		if reqs == nil {
			reqs = []eval.PendingRequest{}
		}
		if grants == nil {
			grants = []eval.Grant{}
		}
		out.Sessions = append(out.Sessions, approvalsAnswer{SessionID: sess.ID(), Requests: reqs, Grants: grants})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.session(w, r.PathValue("id"), eval.Agent{}, nil)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	// With a store: what every replica recorded, not this one's last view.
	if err := sess.Sync(ctx); err != nil {
		s.storeFailed(w, fmt.Errorf("%w: %w", eval.ErrStoreUnavailable, err))
		return
	}
	a := approvalsAnswer{SessionID: sess.ID(), Requests: sess.Requests(), Grants: sess.Grants()}
	if a.Requests == nil {
		a.Requests = []eval.PendingRequest{}
	}
	if a.Grants == nil {
		a.Grants = []eval.Grant{}
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	var req approveRequest
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &req, false) {
		return
	}
	if strings.TrimSpace(req.RequestID) == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, `the body has no "request_id"`)
		return
	}
	scope, err := eval.ParseGrantScope(req.Scope)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, `"scope" must be "once" or "session": `+err.Error())
		return
	}
	if scope == eval.GrantAlways {
		writeError(w, http.StatusForbidden, CodeAlwaysRefused,
			`scope "always" is not given over HTTP: a persistent approval is a reviewed rule file, written with `+
				"`celguard approve "+req.RequestID+" --always` on the user's machine; approve \"once\" or \"session\" here")
		return
	}
	sess, _, ok := s.session(w, r.PathValue("id"), eval.Agent{}, nil)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	g, rq, err := sess.Approve(ctx, req.RequestID, scope, approvedBy)
	switch {
	case err == nil:
	case errors.Is(err, eval.ErrNoRequest):
		writeError(w, http.StatusNotFound, CodeNoSuchRequest, err.Error())
		return
	case rq.Mandatory:
		writeError(w, http.StatusForbidden, CodeMandatoryRule, err.Error())
		return
	default:
		s.storeFailed(w, err)
		return
	}
	s.log.Info("approval recorded", "session_id", sess.ID(), "request", rq.ID, "rule_id", rq.Rule, "scope", string(scope), "call", rq.Summary)
	writeJSON(w, http.StatusOK, approveAnswer{Grant: g, Request: rq})
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.session(w, r.PathValue("id"), eval.Agent{}, nil)
	if !ok {
		return
	}
	id := r.PathValue("approval")
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	found, err := sess.Revoke(ctx, id)
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, CodeNoSuchRequest, fmt.Sprintf("session %q has no pending request or grant %q", sess.ID(), id))
		return
	}
	s.log.Info("approval revoked", "session_id", sess.ID(), "id", id)
	w.WriteHeader(http.StatusNoContent)
}
