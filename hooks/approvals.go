package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/stdlib"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// Approvals across the sessions of a state directory: the approve command
// runs outside any session, with a request id, and finds the session whose
// authenticated state holds the request. A state file that fails its check
// is never read for a request: an agent that writes a request of its own
// into a state file (it runs as the user) makes the file tampered, and the
// request is not there.

// SessionRequest is a pending approval request of a session.
type SessionRequest struct {
	Session string `json:"session_id"`
	eval.PendingRequest
}

// SessionGrant is an approval given in a session.
type SessionGrant struct {
	Session string `json:"session_id"`
	eval.Grant
}

// eachSession calls fn with every session's authenticated state; fn
// returns whether it changed the state (it is committed). A state that
// fails its check is skipped, and said in the returned warnings.
func eachSession(ctx context.Context, dir *statedir.Dir, fn func(st *eval.SessionState) bool) (warnings []string, err error) {
	ids, err := dir.Sessions()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		w, err := withSession(ctx, dir, id, fn)
		if err != nil {
			return warnings, err
		}
		if w != "" {
			warnings = append(warnings, w)
		}
	}
	return warnings, nil
}

// withSession runs fn on session id's state as the file store keeps it,
// and commits it when fn changed it, through the store's commit, as the
// hooks' decisions do: on a state a hook changed meanwhile fn runs again.
func withSession(ctx context.Context, dir *statedir.Dir, id string, fn func(st *eval.SessionState) bool) (warning string, err error) {
	f := store.NewFileDir(dir)
	key := state.Key{Scope: policy.ScopeSession, ID: id}
	for range eval.DefaultStoreRetries {
		// A read: version "" is an absent entry, which is left so.
		ok, cur, err := f.Commit(ctx, []state.Op{{Key: key}})
		switch {
		case err != nil:
			return "", err
		case ok:
			return "", nil
		case cur[0].Fault != "":
			return cur[0].Fault + "; its requests and approvals are not used", nil
		}
		st := eval.SessionState{ID: id}
		if err := json.Unmarshal(cur[0].State, &st); err != nil {
			return "", fmt.Errorf("the session state of %q is signed but not valid (%v); delete it to start the session afresh", id, err)
		}
		if !fn(&st) {
			return "", nil
		}
		raw, err := json.Marshal(st)
		if err != nil {
			return "", fmt.Errorf("cannot encode the session state: %w", err)
		}
		if ok, _, err = f.Commit(ctx, []state.Op{{Key: key, Version: cur[0].Version, Write: raw}}); err != nil || ok {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: the state of session %q kept changing", eval.ErrStoreConflict, id)
}

// Approvals lists the pending requests and the given approvals of every
// session in the state directory.
func Approvals(ctx context.Context, dir *statedir.Dir) (reqs []SessionRequest, grants []SessionGrant, warnings []string, err error) {
	now := dir.Clock()
	warnings, err = eachSession(ctx, dir, func(st *eval.SessionState) bool {
		for _, r := range st.Requests {
			if now.Sub(r.Created) <= eval.RequestTTL {
				reqs = append(reqs, SessionRequest{Session: st.ID, PendingRequest: r})
			}
		}
		for _, g := range st.Grants {
			grants = append(grants, SessionGrant{Session: st.ID, Grant: g})
		}
		return false
	})
	return reqs, grants, warnings, err
}

// FindRequest returns the pending request id of a session of the state
// directory, with its session.
func FindRequest(ctx context.Context, dir *statedir.Dir, id string) (SessionRequest, []string, error) {
	reqs, _, warnings, err := Approvals(ctx, dir)
	if err != nil {
		return SessionRequest{}, warnings, err
	}
	var found []SessionRequest
	for _, r := range reqs {
		if r.ID == id {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return SessionRequest{}, warnings, fmt.Errorf("%w %q in %s (it may have expired after %s, been answered already, or be in another --state-dir)",
			eval.ErrNoRequest, id, dir.Dir, eval.RequestTTL)
	case 1:
		return found[0], warnings, nil
	}
	return SessionRequest{}, warnings, fmt.Errorf("request %q is pending in %d sessions; it cannot be told apart: let the call be asked again", id, len(found))
}

// Approve answers the pending request req (FindRequest) of its session with
// scope. by says who approved.
func Approve(ctx context.Context, dir *statedir.Dir, req SessionRequest, scope eval.GrantScope, by string) (eval.Grant, error) {
	var g eval.Grant
	var aerr error
	warning, err := withSession(ctx, dir, req.Session, func(st *eval.SessionState) bool {
		var r eval.PendingRequest
		g, r, aerr = st.Approve(req.ID, scope, by, dir.Clock())
		if aerr == nil && r.Digest != req.Digest {
			// Not the request that was shown: refuse rather than approve
			// another call under the same id.
			aerr = fmt.Errorf("request %q changed while it was being approved; run celguard approve again", req.ID)
		}
		return aerr == nil
	})
	switch {
	case err != nil:
		return g, err
	case warning != "":
		return g, errors.New(warning)
	}
	return g, aerr
}

// Deny answers the pending request req (FindRequest) of its session with
// a denial (eval.Session.Deny): its exact call is refused for the rest of
// the session with note, and asks no more. by says who denied it.
func Deny(ctx context.Context, dir *statedir.Dir, req SessionRequest, by, note string) (eval.Denial, error) {
	var dn eval.Denial
	var derr error
	warning, err := withSession(ctx, dir, req.Session, func(st *eval.SessionState) bool {
		var r eval.PendingRequest
		dn, r, derr = st.Deny(req.ID, by, note, dir.Clock())
		if derr == nil && r.Digest != req.Digest {
			derr = fmt.Errorf("request %q changed while it was being denied; run celguard approve --deny again", req.ID)
		}
		return derr == nil
	})
	switch {
	case err != nil:
		return dn, err
	case warning != "":
		return dn, errors.New(warning)
	}
	return dn, derr
}

// Revoke forgets the approvals and pending requests with id in every
// session of the state directory; it returns how many sessions had one.
func Revoke(ctx context.Context, dir *statedir.Dir, id string) (int, []string, error) {
	n := 0
	warnings, err := eachSession(ctx, dir, func(st *eval.SessionState) bool {
		if st.Revoke(id) {
			n++
			return true
		}
		return false
	})
	return n, warnings, err
}

// AlwaysDir is the directory under the user's policy directory where
// `celguard approve --always` writes its rules.
const AlwaysDir = "approved"

// AlwaysRule is the persistent form of an approval (scope always): an
// ordinary policy file with one allow rule for the exact call of r (its
// tool, its canonical arguments, its working directory), and a test suite
// that runs that call against it, named approved-ID.yaml and
// approved-ID_test.yaml. They are meant to be read: the comment says who
// wrote them, when and why, and deleting the two files revokes the
// approval. Strings are written as JSON strings, which both YAML and CEL
// read as written.
func AlwaysRule(r eval.PendingRequest, by string, now time.Time) (name string, policyYAML, testYAML []byte, err error) {
	if r.Mandatory {
		return "", nil, nil, fmt.Errorf("request %q is for the mandatory rule %s, which no approval lifts", r.ID, r.Rule)
	}
	if r.Read {
		return "", nil, nil, fmt.Errorf("request %q is for a read of an MCP resource or prompt (%s), which no allow rule of a tool call covers; approve it once or --session", r.ID, r.Summary)
	}
	if r.ArgsOmitted {
		return "", nil, nil, fmt.Errorf("request %q: the call's arguments are larger than %d bytes and were not kept, so no rule can be written for it; approve it --session or once", r.ID, eval.MaxRequestArgs)
	}
	canon, err := stdlib.CanonicalNative(r.Args)
	if err != nil {
		return "", nil, nil, err
	}
	q := func(s string) string { b, _ := marshal(s); return string(b) }
	cond := "canonical(args) == " + q(canon)
	if r.Cwd != "" {
		cond += " && cwd == " + q(r.Cwd)
	}
	name = "approved-" + r.ID
	var p strings.Builder
	fmt.Fprintf(&p, "# Written by %s on %s: the user approved this exact call for good,\n", by, now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&p, "# which rule %s (policy %s) asked about:\n", r.Rule, r.Policy)
	for _, line := range strings.Split(r.Summary, "\n") {
		fmt.Fprintf(&p, "#   %s\n", line)
	}
	p.WriteString("# It is an ordinary policy of your user layer: review it like any other.\n")
	p.WriteString("# Delete this file and " + name + "_test.yaml to take the approval back.\n")
	p.WriteString("# No rule here can lift a mandatory rule (docs/layers.md).\n")
	fmt.Fprintf(&p, "apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\n", name)
	fmt.Fprintf(&p, "description: %s\n", q("Allows the exact call approved with celguard approve "+r.ID+" --always."))
	fmt.Fprintf(&p, "rules:\n  - id: %s\n    match: {tools: [%s]}\n    condition: %s\n    verdict: allow\n    reason: %s\n",
		name, q(r.Tool), q(cond), q("Approved for good by the user (celguard approve "+r.ID+" --always): "+r.Summary))
	args, err := marshal(r.Args)
	if err != nil {
		return "", nil, nil, err
	}
	if r.Args == nil {
		args = []byte("{}")
	}
	var t strings.Builder
	fmt.Fprintf(&t, "# The test of %s.yaml, written with it by %s.\n", name, by)
	fmt.Fprintf(&t, "name: %s\npolicies: [%s.yaml]\ncases:\n", name, name)
	fmt.Fprintf(&t, "  - name: the approved call is allowed\n    steps:\n      - before: {tool: %s, args: %s", q(r.Tool), args)
	if r.Cwd != "" {
		fmt.Fprintf(&t, ", cwd: %s", q(r.Cwd))
	}
	fmt.Fprintf(&t, "}\n        expect: {verdict: allow, rule: %s}\n", name)
	return name, []byte(p.String()), []byte(t.String()), nil
}

// WriteAlwaysRule writes AlwaysRule's files into dir/approved (dir: the
// user's policy directory), and returns the policy file's path.
func WriteAlwaysRule(dir string, r eval.PendingRequest, by string, now time.Time) (string, error) {
	name, pol, test, err := AlwaysRule(r, by, now)
	if err != nil {
		return "", err
	}
	d := filepath.Join(dir, AlwaysDir)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", d, err)
	}
	path := filepath.Join(d, name+".yaml")
	if err := atomicfile.Write(filepath.Join(d, name+"_test.yaml"), test, 0o600); err != nil {
		return "", fmt.Errorf("cannot write the approval's test: %w", err)
	}
	if err := atomicfile.Write(path, pol, 0o600); err != nil {
		return "", fmt.Errorf("cannot write the approval's rule: %w", err)
	}
	return path, nil
}
