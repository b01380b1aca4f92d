package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/celguard/celguard/eval"
)

// The approval routes let a person (or the tool they use) answer the asks
// of a session: list its pending requests and grants, approve a request
// once or for the session, deny one (POST /v1/sessions/{id}/denials),
// revoke a grant. They are the Operator's
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

// denyRequest is the body of POST /v1/sessions/{id}/denials.
type denyRequest struct {
	RequestID string `json:"request_id"`
	// Note is what the agent reads with every refusal of the call.
	Note string `json:"note"`
	// Operator names the person denying, for the decision log (the token
	// says only that it is an operator).
	Operator string `json:"operator"`
	// Digest, when given, is the digest of the call the person was shown:
	// another call under the same id is refused (409 stale_request).
	Digest string `json:"digest"`
}

// deniedAnswer is the answer of POST /v1/sessions/{id}/denials.
type deniedAnswer struct {
	Denial  eval.Denial         `json:"denial"`
	Request eval.PendingRequest `json:"request"`
}

// deny answers a pending request with a denial (eval.Session.Deny): the
// exact call is refused for the rest of the session with the note, and
// asks no more. It is its own route, not a scope of the approve route:
// a scope is how far a grant reaches and the answer is a Grant, while a
// denial grants nothing and answers a Denial, so "scope": "deny" would be
// a scope that is not one. A request answered already (denied or
// approved), or whose call is not the digest given, answers 409
// stale_request as the console's; one never made or expired 404
// no_such_request as approve's. The denial goes to the decision log with
// the operator's name (code operator_denied), as the console's does; it
// stays if the log cannot record it (it only refuses), and the answer is
// then 503 decision_log_failed.
func (s *Server) deny(w http.ResponseWriter, r *http.Request) {
	var req denyRequest
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &req, false) {
		return
	}
	req.Note, req.Operator = strings.TrimSpace(req.Note), strings.TrimSpace(req.Operator)
	switch {
	case strings.TrimSpace(req.RequestID) == "":
		writeError(w, http.StatusBadRequest, CodeInvalidInput, `the body has no "request_id"`)
		return
	case utf8.RuneCountInString(req.Note) > maxNote:
		writeError(w, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf(`"note" is longer than %d characters`, maxNote))
		return
	case utf8.RuneCountInString(req.Operator) > maxOperatorName || strings.ContainsFunc(req.Operator, func(c rune) bool { return c < ' ' || c == 0x7f }):
		writeError(w, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf(`"operator" must be at most %d printable characters`, maxOperatorName))
		return
	}
	sess, _, ok := s.session(w, r.PathValue("id"), eval.Agent{}, nil)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	if err := sess.Sync(ctx); err != nil {
		s.storeFailed(w, fmt.Errorf("%w: %w", eval.ErrStoreUnavailable, err))
		return
	}
	operator := "operator token"
	if req.Operator != "" {
		operator = req.Operator + " (operator token)"
	}
	stale := func(msg string) {
		s.log.Warn("denial refused", "operator", operator, "session_id", sess.ID(), "request", req.RequestID, "code", CodeStaleAnswer)
		writeError(w, http.StatusConflict, CodeStaleAnswer, msg)
	}
	// One read of the pending requests: a second one may have lost a
	// request since (expired, answered), and i would index past it.
	reqs := sess.Requests()
	i := slices.IndexFunc(reqs, func(p eval.PendingRequest) bool { return p.ID == req.RequestID })
	if i < 0 {
		answered := slices.ContainsFunc(sess.Denials(), func(d eval.Denial) bool { return d.ID == req.RequestID }) ||
			slices.ContainsFunc(sess.Grants(), func(g eval.Grant) bool { return g.ID == req.RequestID })
		if answered {
			stale(fmt.Sprintf("request %s was answered already: nothing was changed", req.RequestID))
			return
		}
		writeError(w, http.StatusNotFound, CodeNoSuchRequest, fmt.Sprintf("session %q has no pending request %q (never made, expired or forgotten)", sess.ID(), req.RequestID))
		return
	}
	if req.Digest != "" && subtle.ConstantTimeCompare([]byte(req.Digest), []byte(reqs[i].Digest)) != 1 {
		stale(fmt.Sprintf("request %s is not the call you were shown (its digest differs): read it again", req.RequestID))
		return
	}
	dn, rq, err := sess.Deny(ctx, req.RequestID, operator, req.Note)
	switch {
	case err == nil:
	case errors.Is(err, eval.ErrNoRequest):
		stale(fmt.Sprintf("request %s was answered already: nothing was changed", req.RequestID))
		return
	default:
		s.storeFailed(w, err)
		return
	}
	id, err := s.recordAnswer(ctx, sess, rq, eval.ApprovalDenied, "", req.Note, operator, "api")
	if err != nil {
		s.log.Error("denial not recorded in the decision log", "error", err.Error())
		writeError(w, http.StatusServiceUnavailable, eval.CodeDecisionLogFailed,
			"the denial stands (it only refuses), but the decision log could not record it: "+err.Error())
		return
	}
	if s.console != nil {
		s.console.feed.noteHost(id, "api")
		s.console.feed.changed()
	}
	s.log.Info("denial recorded", "operator", operator, "session_id", sess.ID(), "request", rq.ID, "rule_id", rq.Rule, "call", rq.Summary)
	writeJSON(w, http.StatusOK, deniedAnswer{Denial: dn, Request: rq})
}
