package eval

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Denials: a request a person denies (Session.Deny) keeps its exact call
// refused for the rest of the session, with the person's note, before any
// grant, judge or approver is consulted (evaluation.denied, approve.go),
// and the call makes no new request. A denial only ever refuses: forgetting
// one (past MaxDenials, or revoked) asks the call again.

// MaxDenials bounds the denials a session keeps; past it the oldest is
// forgotten, and its call is asked again (never allowed).
const MaxDenials = 64

// Denial is a person's refusal of a pending request: the exact call (the
// rule that asked and the call's Digest) is refused for the rest of the
// session, with the note, and makes no new request.
type Denial struct {
	// ID is the request it answered.
	ID      string `json:"id"`
	Rule    string `json:"rule_id"`
	Tool    string `json:"tool"`
	Digest  string `json:"digest"`
	Summary string `json:"summary,omitempty"`
	// Note is what the person said, shown with every refusal.
	Note string `json:"note,omitempty"`
	// By says who denied it.
	By string    `json:"by,omitempty"`
	At time.Time `json:"at"`
}

// deny answers request id with a denial.
func (b *approvalBook) deny(id, by, note string, now time.Time) (Denial, PendingRequest, error) {
	b.expire(now)
	i := b.find(id)
	if i < 0 {
		return Denial{}, PendingRequest{}, fmt.Errorf("%w: %q (it may have expired after %s, or been answered already)", ErrNoRequest, id, RequestTTL)
	}
	r := b.requests[i]
	dn := Denial{ID: r.ID, Rule: r.Rule, Tool: r.Tool, Digest: r.Digest, Summary: r.Summary, Note: cut(note), By: by, At: now.UTC()}
	b.requests = slices.Delete(b.requests, i, i+1)
	if len(b.denials) >= MaxDenials {
		b.denials = slices.Delete(b.denials, 0, len(b.denials)-MaxDenials+1)
	}
	b.denials = append(b.denials, dn)
	return dn, r, nil
}

// denied finds the denial of the call with digest asked by rule.
func (b *approvalBook) denied(rule, digest string) (Denial, bool) {
	i := slices.IndexFunc(b.denials, func(d Denial) bool { return d.Rule == rule && d.Digest == digest })
	if i < 0 {
		return Denial{}, false
	}
	return b.denials[i], true
}

// Denials returns the requests a person denied in the session, oldest
// first.
func (s *Session) Denials() []Denial {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.book.denials)
}

// Deny answers the pending request id with a denial: its exact call is
// refused for the rest of the session (code approval_denied, with note),
// whatever grant there is, and asks no more (no new request). by says who
// denied it. With a store it is committed as Approve's grant is. The error
// wraps ErrNoRequest when there is no such request.
func (s *Session) Deny(ctx context.Context, id, by, note string) (Denial, PendingRequest, error) {
	var (
		dn Denial
		r  PendingRequest
	)
	err := s.changeBook(ctx, func(b *approvalBook, now time.Time) error {
		var err error
		dn, r, err = b.deny(id, by, note, now)
		return err
	})
	return dn, r, err
}

// Deny answers the pending request id with a denial in the state, as
// Session.Deny does, for a program that holds a session's state but no
// engine (the approve command). by says who denied it.
func (st *SessionState) Deny(id, by, note string, now time.Time) (Denial, PendingRequest, error) {
	b := st.book()
	dn, r, err := b.deny(id, by, note, now)
	if err == nil {
		st.put(b)
	}
	return dn, r, err
}
