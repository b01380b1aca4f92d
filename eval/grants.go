package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/celguard/celguard/stdlib"
)

// Approvals a person gives outside the approver (docs/approvals.md). An ask
// that nobody could answer while the call waited (a host that cannot ask:
// Codex, Gemini CLI) is recorded as a Request, with a short random id, bound
// to the exact call (its Digest) and the rule that asked. A person answers
// it later (`celguard approve ID`, or the serve API) with a GrantScope, which
// makes a Grant in the session's state; the rerun of the call finds it.
//
//   - GrantOnce approves the exact call (tool, canonical arguments, working
//     directory) once: the rerun runs, the call after it is asked again.
//   - GrantSession approves every call of the same tool the rule asks about,
//     for the rest of the session (BitCode's "Always allow", per session).
//   - GrantAlways is GrantSession's grant for the exact call, and the caller
//     writes a persistent allow rule for that call into the user's layer
//     (the CLI does; eval never writes policy files).
//
// A person may also deny a request (denials.go). No approval ever lifts a
// mandatory rule (liftable, approve.go).

// GrantScope is how far an approval a person gives reaches (not a
// counter's policy.Scope). Its values are stable JSON strings.
type GrantScope string

// Grant scopes.
const (
	GrantOnce    GrantScope = "once"
	GrantSession GrantScope = "session"
	GrantAlways  GrantScope = "always"
)

// ParseGrantScope reads a grant scope's name.
func ParseGrantScope(s string) (GrantScope, error) {
	switch GrantScope(s) {
	case GrantOnce, GrantSession, GrantAlways:
		return GrantScope(s), nil
	}
	return "", fmt.Errorf("unknown approval scope %q: want once, session or always", s)
}

// Subjects of a grant.
const (
	// SubjectCall is the exact call: the rule, and the call's Digest.
	SubjectCall = "call"
	// SubjectRule is every call of one tool that one rule asks about.
	SubjectRule = "rule"
)

// Bounds on what a session keeps of requests and grants. Past them the
// oldest is forgotten: a forgotten request cannot be approved (the call is
// asked again), a forgotten grant asks again; neither ever allows more.
const (
	MaxRequests = 64
	MaxGrants   = 256
	// RequestTTL is how long a request can be approved after it was made.
	RequestTTL = 24 * time.Hour
	// maxSummary bounds the summary of a call kept in a request.
	maxSummary = 400
	// MaxRequestArgs bounds the canonical JSON of the arguments a request
	// keeps; larger arguments are left out (ArgsOmitted), so that a
	// session's requests never outgrow its state.
	MaxRequestArgs = 16 << 10
)

// PendingRequest is an ask recorded for a person to answer later (not an
// ApprovalRequest, which an Approver is asked while the call waits).
type PendingRequest struct {
	// ID is short, random and unique within the session.
	ID     string `json:"id"`
	Rule   string `json:"rule_id"`
	Policy string `json:"policy,omitempty"`
	// Mandatory is never true of a request made by the engine; it is kept
	// so that a request for a mandatory rule, however it got there, is
	// refused (Approve).
	Mandatory bool   `json:"mandatory,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Tool      string `json:"tool"`
	// Args and Cwd are the call, for the persistent rule of GrantAlways
	// and for showing the person what they approve.
	Args map[string]any `json:"args,omitempty"`
	// ArgsOmitted says the arguments were larger than MaxRequestArgs and
	// are not kept: the request can be approved, not written as a rule.
	ArgsOmitted bool   `json:"args_omitted,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	// Digest is CallDigest of the call.
	Digest string `json:"digest"`
	// Summary is a short text of the call (Bash: the command).
	Summary string    `json:"summary"`
	Created time.Time `json:"created"`
	// Host is what the host said about the request, opaque to eval (the
	// rules Claude Code's permission dialog offered, hooks/permission.go).
	Host json.RawMessage `json:"host,omitempty"`
	// Read says the request is for a read of phase resource (an MCP
	// resource or prompt; Tool and Args are its ReadCall), not a tool
	// call: it is approved once or for the session, never written as a
	// rule (AlwaysRule refuses it).
	Read bool `json:"read,omitempty"`
}

// Grant is an approval a person gave.
type Grant struct {
	// ID is the request it answered (or a fresh id).
	ID      string     `json:"id"`
	Scope   GrantScope `json:"scope"`
	Subject string     `json:"subject"`
	Rule    string     `json:"rule_id"`
	Tool    string     `json:"tool"`
	// Digest is the call's CallDigest (SubjectCall).
	Digest  string `json:"digest,omitempty"`
	Summary string `json:"summary,omitempty"`
	// By says who or what recorded it, e.g. "celguard approve".
	By string    `json:"by,omitempty"`
	At time.Time `json:"at"`
}

// covers reports whether g approves the call with digest of tool, asked
// by rule.
func (g Grant) covers(rule, tool, digest string) bool {
	if g.Rule != rule {
		return false
	}
	switch g.Subject {
	case SubjectCall:
		return g.Digest == digest
	case SubjectRule:
		return g.Tool == tool
	}
	return false
}

// newRequestID is 8 random lowercase hex digits (32 bits): short enough to
// type, drawn afresh for every request. It is random so that nothing in
// the call lets anyone predict it, but it is no secret: the agent reads it
// in the refusal. What binds it is the session's authenticated state.
func newRequestID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// summarize is a one-line text of a call for people: a shell command, a
// path, or the canonical arguments, cut short.
func summarize(c Call) string {
	s := ""
	for _, k := range []string{"command", "cmd", "file_path", "path", "url"} {
		if v, ok := c.Args[k].(string); ok && v != "" {
			s = v
			break
		}
	}
	if s == "" {
		s, _ = stdlib.CanonicalNative(c.Args)
	}
	return c.Tool + ": " + cut(strings.Join(strings.Fields(s), " "))
}

// cut shortens s to maxSummary characters.
func cut(s string) string {
	if utf8.RuneCountInString(s) > maxSummary {
		return string([]rune(s)[:maxSummary-1]) + "…"
	}
	return s
}

// approvalBook is every approval of a session that outlives its ask: the
// approver's answers remembered (by approval key: the rule and the call's
// digest, or the rule alone; SessionState.Approvals), and the requests and
// grants of approvals a person gives outside the approver. The Session and
// the SessionState share its logic; covering is the one lookup an ask
// makes.
type approvalBook struct {
	remembered map[string]bool
	requests   []PendingRequest
	grants     []Grant
	denials    []Denial
}

// remember records an approver's answer under key. The set is bounded:
// past the bound it is cleared, so the user is asked again (never allowed
// without asking).
func (b *approvalBook) remember(key string) {
	if len(b.remembered) >= DefaultMaxApprovals {
		clear(b.remembered)
	}
	b.remembered[key] = true
}

// covering finds the approval that lets a call to rule (tool, digest; its
// approval keys callKey and ruleKey) run: an answer remembered, or a
// grant, consumed if it is for once. A remembered answer is reported as the
// zero Grant.
func (b *approvalBook) covering(rule, tool, callKey, ruleKey, digest string) (Grant, bool) {
	if b.remembered[callKey] || b.remembered[ruleKey] {
		return Grant{}, true
	}
	return b.use(rule, tool, digest)
}

// request returns the pending request for rule and digest, made afresh if
// there is none, so that an agent retrying a call gets the same id.
func (b *approvalBook) request(rule, policyName, reason string, c Call, digest string, now time.Time) PendingRequest {
	b.expire(now)
	for _, r := range b.requests {
		if r.Rule == rule && r.Digest == digest {
			return r
		}
	}
	id := newRequestID()
	for b.find(id) >= 0 {
		id = newRequestID()
	}
	r := PendingRequest{ID: id, Rule: rule, Policy: policyName, Reason: reason, Tool: c.Tool, Args: c.Args, Cwd: c.Cwd,
		Digest: digest, Summary: summarize(c), Created: now.UTC()}
	if canon, err := stdlib.CanonicalNative(c.Args); err != nil || len(canon) > MaxRequestArgs {
		r.Args, r.ArgsOmitted = nil, true
	}
	r.Reason = cut(reason)
	if len(b.requests) >= MaxRequests {
		b.requests = slices.Delete(b.requests, 0, len(b.requests)-MaxRequests+1)
	}
	b.requests = append(b.requests, r)
	return r
}

// expire forgets requests past RequestTTL.
func (b *approvalBook) expire(now time.Time) {
	b.requests = slices.DeleteFunc(b.requests, func(r PendingRequest) bool { return now.Sub(r.Created) > RequestTTL })
}

func (b *approvalBook) find(id string) int {
	return slices.IndexFunc(b.requests, func(r PendingRequest) bool { return r.ID == id })
}

// ErrNoRequest is the error of approving a request that is not there (never
// made, answered already, expired or forgotten).
var ErrNoRequest = errors.New("no such approval request")

// approve answers request id with scope.
func (b *approvalBook) approve(id string, scope GrantScope, by string, now time.Time) (Grant, PendingRequest, error) {
	if _, err := ParseGrantScope(string(scope)); err != nil {
		return Grant{}, PendingRequest{}, err
	}
	b.expire(now)
	i := b.find(id)
	if i < 0 {
		return Grant{}, PendingRequest{}, fmt.Errorf("%w: %q (it may have expired after %s, or been answered already)", ErrNoRequest, id, RequestTTL)
	}
	r := b.requests[i]
	if r.Mandatory {
		return Grant{}, r, fmt.Errorf("request %q is for the mandatory rule %s, which no approval lifts", id, r.Rule)
	}
	g := Grant{ID: r.ID, Scope: scope, Subject: SubjectCall, Rule: r.Rule, Tool: r.Tool, Digest: r.Digest, Summary: r.Summary, By: by, At: now.UTC()}
	if scope == GrantSession {
		g.Subject, g.Digest, g.Summary = SubjectRule, "", "every "+r.Tool+" call rule "+r.Rule+" asks about"
	}
	b.requests = slices.Delete(b.requests, i, i+1)
	b.add(g)
	return g, r, nil
}

// add records g, forgetting the oldest grant past MaxGrants.
func (b *approvalBook) add(g Grant) {
	if len(b.grants) >= MaxGrants {
		b.grants = slices.Delete(b.grants, 0, len(b.grants)-MaxGrants+1)
	}
	b.grants = append(b.grants, g)
}

// revoke forgets the grants, requests and denials with id; it reports
// whether there were any.
func (b *approvalBook) revoke(id string) bool {
	n := len(b.grants) + len(b.requests) + len(b.denials)
	b.grants = slices.DeleteFunc(b.grants, func(g Grant) bool { return g.ID == id })
	b.requests = slices.DeleteFunc(b.requests, func(r PendingRequest) bool { return r.ID == id })
	b.denials = slices.DeleteFunc(b.denials, func(d Denial) bool { return d.ID == id })
	return len(b.grants)+len(b.requests)+len(b.denials) != n
}

// use finds a grant covering the call and consumes it if it is for once.
func (b *approvalBook) use(rule, tool, digest string) (Grant, bool) {
	i := slices.IndexFunc(b.grants, func(g Grant) bool { return g.covers(rule, tool, digest) })
	if i < 0 {
		return Grant{}, false
	}
	g := b.grants[i]
	if g.Scope == GrantOnce {
		b.grants = slices.Delete(b.grants, i, i+1)
	}
	// The call runs: its request, if one is still pending, is answered.
	b.requests = slices.DeleteFunc(b.requests, func(r PendingRequest) bool { return r.Rule == rule && r.Digest == digest })
	return g, true
}

// book is the state's approval book; put writes it back.
func (st *SessionState) book() *approvalBook {
	return &approvalBook{requests: slices.Clone(st.Requests), grants: slices.Clone(st.Grants), denials: slices.Clone(st.Denials)}
}

func (st *SessionState) put(b *approvalBook) {
	st.Requests, st.Grants, st.Denials = b.requests, b.grants, b.denials
}

// Approve answers the pending request id with scope in the state, as
// Session.Approve does, for a program that holds a session's state but no
// engine (the approve command, a store). by says who approved.
func (st *SessionState) Approve(id string, scope GrantScope, by string, now time.Time) (Grant, PendingRequest, error) {
	b := st.book()
	g, r, err := b.approve(id, scope, by, now)
	if err == nil {
		st.put(b)
	}
	return g, r, err
}

// Revoke forgets the grant, pending request or denial id in the state; it
// reports whether there was one.
func (st *SessionState) Revoke(id string) bool {
	b := st.book()
	ok := b.revoke(id)
	st.put(b)
	return ok
}

// Requests returns the session's pending approval requests, oldest first.
func (s *Session) Requests() []PendingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.book.expire(s.eng.cfg.now())
	return slices.Clone(s.book.requests)
}

// Grants returns the approvals given in the session, oldest first.
func (s *Session) Grants() []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.book.grants)
}

// Approve answers the pending request id with scope (GrantAlways grants the
// exact call for the session; writing the persistent rule is the
// caller's). by says who approved. With a store (WithStore) the grant is
// committed to it, on the session's current stored state, so that every
// replica honours it: an error that is not about the request says the
// store could not be reached (store_unavailable) or kept changing
// (store_conflict), and nothing was recorded. The error wraps
// ErrNoRequest when there is no such request.
func (s *Session) Approve(ctx context.Context, id string, scope GrantScope, by string) (Grant, PendingRequest, error) {
	var (
		g Grant
		r PendingRequest
	)
	err := s.changeBook(ctx, func(b *approvalBook, now time.Time) error {
		var err error
		g, r, err = b.approve(id, scope, by, now)
		return err
	})
	return g, r, err
}

// errNothingRevoked is changeBook's error of a revoke (or a note) that
// found nothing.
var errNothingRevoked = errors.New("nothing to revoke")

// Revoke forgets the grant, pending request or denial id; it reports
// whether there was one. With a store the change is committed to it, as Approve's; the
// error says the store failed and nothing was revoked.
func (s *Session) Revoke(ctx context.Context, id string) (bool, error) {
	err := s.changeBook(ctx, func(b *approvalBook, _ time.Time) error {
		if !b.revoke(id) {
			return errNothingRevoked
		}
		return nil
	})
	if errors.Is(err, errNothingRevoked) {
		return false, nil
	}
	return err == nil, err
}

// changeBook applies change to the session's approval book, where the
// session's state is kept (backend.change): with a store, on the state as
// stored. A change that fails leaves the book as it was.
func (s *Session) changeBook(ctx context.Context, change func(*approvalBook, time.Time) error) error {
	apply := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		b := approvalBook{remembered: s.book.remembered, requests: slices.Clone(s.book.requests), grants: slices.Clone(s.book.grants),
			denials: slices.Clone(s.book.denials)}
		if err := change(&b, s.eng.cfg.now()); err != nil {
			return err
		}
		s.book = b
		return nil
	}
	return s.be.change(ctx, s, apply)
}

// RequestFor returns the pending request for the exact call c, whichever
// rule asked.
func (s *Session) RequestFor(c Call) (PendingRequest, bool) {
	digest, err := CallDigest(c)
	if err != nil {
		return PendingRequest{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.book.requests {
		if r.Digest == digest {
			return r, true
		}
	}
	return PendingRequest{}, false
}
