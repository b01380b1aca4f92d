package eval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

const grantsPolicy = `
rules:
  - id: ask-shell
    match: {tools: [Bash]}
    verdict: ask
    reason: shell commands are asked
  - id: ask-write
    match: {tools: [Write]}
    verdict: ask
`

const grantsMandatory = `
enforcement: mandatory
rules:
  - id: ask-deploy
    match: {tools: [Deploy]}
    verdict: ask
    reason: deploys are always asked
`

// TestApprovalGrants: an ask the host defers is recorded as a request; the
// request approved once lets the identical call run once, a different call
// is still asked; approved for the session, every call of that tool the
// rule asks about runs; a revoked grant asks again; a mandatory rule's ask
// makes no request and no grant lifts it. The state carries all of it
// across processes (JSON round trips).
func TestApprovalGrants(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, eng := grantsSession(t, &now)
	ctx := context.Background()
	// next restores the session from its state as JSON, as the next hook
	// process does.
	next := func() {
		b, err := json.Marshal(s.State())
		require.NoError(t, err)
		var st eval.SessionState
		require.NoError(t, json.Unmarshal(b, &st))
		s, err = eng.RestoreSession(st)
		require.NoError(t, err)
	}
	before := func(tool, cmd string) eval.Decision {
		t.Helper()
		d, err := s.Before(ctx, eval.Call{Tool: tool, Args: map[string]any{"command": cmd}, Cwd: "/srv/app"})
		require.NoError(t, err)
		next()
		return d
	}

	d := before("Bash", "git commit -m x")
	require.Equal(t, policy.Ask, d.Verdict)
	require.NotNil(t, d.Approval)
	id := d.Approval.Request
	require.Len(t, id, 8)
	assert.Equal(t, id, before("Bash", "git commit -m x").Approval.Request, "a retried call keeps its request")
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "Bash: git commit -m x", reqs[0].Summary)

	_, _, err := s.Approve(ctx, "00000000", eval.GrantOnce, "test")
	require.ErrorIs(t, err, eval.ErrNoRequest)

	// Once: the identical call runs once; a different call is asked.
	st := s.State()
	g, r, err := st.Approve(id, eval.GrantOnce, "test", now)
	require.NoError(t, err)
	assert.Equal(t, "ask-shell", r.Rule)
	assert.Equal(t, eval.SubjectCall, g.Subject)
	s, err = eng.RestoreSession(st)
	require.NoError(t, err)
	assert.Equal(t, policy.Ask, before("Bash", "git commit -m y").Verdict, "a different call is still asked")
	d = before("Bash", "git commit -m x")
	assert.Equal(t, policy.Allow, d.Verdict)
	assert.Equal(t, eval.ApprovalRemembered, d.Approval.Outcome)
	assert.Equal(t, "once", d.Approval.Remember)
	assert.Equal(t, id, d.Approval.Request)
	assert.Equal(t, policy.Ask, before("Bash", "git commit -m x").Verdict, "once is once")

	// Session: every Bash call the rule asks about; not Write.
	id2 := before("Bash", "npm install").Approval.Request
	_, _, err = s.Approve(ctx, id2, eval.GrantSession, "test")
	require.NoError(t, err)
	next()
	assert.Equal(t, policy.Allow, before("Bash", "npm install").Verdict)
	assert.Equal(t, policy.Allow, before("Bash", "pytest").Verdict)
	assert.Equal(t, policy.Ask, before("Write", "x").Verdict)
	ok, err := s.Revoke(ctx, id2)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, policy.Ask, before("Bash", "pytest").Verdict, "revoked")

	// Requests expire.
	id3 := before("Write", "y").Approval.Request
	now = now.Add(eval.RequestTTL + time.Minute)
	_, _, err = s.Approve(ctx, id3, eval.GrantOnce, "test")
	assert.ErrorIs(t, err, eval.ErrNoRequest)
}

// TestApprovalGrantsMandatory: a mandatory rule's ask makes no request and
// no grant or remembered approval lifts it, even one written into the state.
func TestApprovalGrantsMandatory(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, eng := grantsSession(t, &now)
	ctx := context.Background()
	before := func(tool, cmd string) eval.Decision {
		t.Helper()
		d, err := s.Before(ctx, eval.Call{Tool: tool, Args: map[string]any{"command": cmd}, Cwd: "/srv/app"})
		require.NoError(t, err)
		return d
	}
	// Mandatory: no request, and no grant applies, even a forged one.
	d := before("Deploy", "prod")
	assert.Equal(t, policy.Ask, d.Verdict)
	assert.Empty(t, d.Approval.Request)
	st := s.State()
	digest, err := eval.CallDigest(eval.Call{Tool: "Deploy", Args: map[string]any{"command": "prod"}, Cwd: "/srv/app"})
	require.NoError(t, err)
	st.Grants = append(st.Grants,
		eval.Grant{ID: "f1", Scope: eval.GrantSession, Subject: eval.SubjectRule, Rule: "ask-deploy", Tool: "Deploy"},
		eval.Grant{ID: "f2", Scope: eval.GrantOnce, Subject: eval.SubjectCall, Rule: "ask-deploy", Tool: "Deploy", Digest: digest})
	st.Approvals = append(st.Approvals, "ask-deploy\x00*")
	s, err = eng.RestoreSession(st)
	require.NoError(t, err)
	assert.Equal(t, policy.Ask, before("Deploy", "prod").Verdict, "no approval lifts a mandatory rule")
	st = s.State()
	st.Requests = append(st.Requests, eval.PendingRequest{ID: "m1", Rule: "ask-deploy", Mandatory: true, Created: now})
	_, _, err = st.Approve("m1", eval.GrantOnce, "test", now)
	assert.ErrorContains(t, err, "mandatory")

}

// TestRequestLargeArgs: a request keeps no arguments past MaxRequestArgs,
// so requests never outgrow the state; it can still be approved.
func TestRequestLargeArgs(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _ := grantsSession(t, &now)
	call := eval.Call{Tool: "Write", Args: map[string]any{"content": strings.Repeat("x", eval.MaxRequestArgs)}}
	d, err := s.Before(context.Background(), call)
	require.NoError(t, err)
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.True(t, reqs[0].ArgsOmitted)
	assert.Nil(t, reqs[0].Args)
	assert.Less(t, len(reqs[0].Summary), 1000)
	_, _, err = s.Approve(context.Background(), d.Approval.Request, eval.GrantOnce, "test")
	require.NoError(t, err)
	d, err = s.Before(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict)
}

// TestApproverRememberMandatory: an approver's "remember" is not kept for a
// mandatory rule: the next call is asked again.
func TestApproverRememberMandatory(t *testing.T) {
	set := mustSet(t, map[string]string{"m.yaml": grantsMandatory})
	asked := 0
	eng, err := eval.New(set, eval.WithApprover(eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
		asked++
		return eval.Approval{Answer: eval.Approve, Remember: eval.RememberRule}, nil
	})))
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	for range 2 {
		d, err := s.Before(context.Background(), eval.Call{Tool: "Deploy"})
		require.NoError(t, err)
		assert.Equal(t, policy.Allow, d.Verdict)
		assert.Empty(t, d.Approval.Remember)
	}
	assert.Equal(t, 2, asked)
}

// grantsSession is a session of the grants policies with requests, its
// clock at *now.
func grantsSession(t *testing.T, now *time.Time) (*eval.Session, *eval.Engine) {
	set := mustSet(t, map[string]string{"g.yaml": grantsPolicy, "m.yaml": grantsMandatory})
	eng, err := eval.New(set, eval.WithApprover(deferAll), eval.WithApprovalRequests(), eval.WithClock(func() time.Time { return *now }))
	require.NoError(t, err)
	return eng.NewSession("s1", nil), eng
}

var deferAll = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Defer}, nil
})

// TestApprovalDenials: a request a person denies keeps its exact call
// refused for the rest of the session (approval_denied, with the note and
// who denied it), makes no new request, wins over a session grant of the
// rule, survives a JSON round trip of the state, and a revoked denial
// asks again; another call of the same rule is still asked.
func TestApprovalDenials(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, eng := grantsSession(t, &now)
	ctx := context.Background()
	next := func() {
		b, err := json.Marshal(s.State())
		require.NoError(t, err)
		var st eval.SessionState
		require.NoError(t, json.Unmarshal(b, &st))
		s, err = eng.RestoreSession(st)
		require.NoError(t, err)
	}
	before := func(cmd string) eval.Decision {
		t.Helper()
		d, err := s.Before(ctx, eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: "/srv/app"})
		require.NoError(t, err)
		next()
		return d
	}
	id := before("git push").Approval.Request
	_, _, err := s.Deny(ctx, "00000000", "ana", "no")
	require.ErrorIs(t, err, eval.ErrNoRequest)
	dn, r, err := s.Deny(ctx, id, "ana", "not on a Friday")
	require.NoError(t, err)
	assert.Equal(t, id, dn.ID)
	assert.Equal(t, r.Digest, dn.Digest)
	_, _, err = s.Deny(ctx, id, "ana", "twice")
	require.ErrorIs(t, err, eval.ErrNoRequest, "a request answered is answered")
	next()

	d := before("git push")
	assert.Equal(t, policy.Block, d.Verdict)
	assert.Equal(t, eval.CodeApprovalDenied, d.Code)
	assert.Equal(t, "shell commands are asked (denied by ana: not on a Friday)", d.Reason)
	require.NotNil(t, d.Approval)
	assert.Equal(t, eval.ApprovalDenied, d.Approval.Outcome)
	assert.Equal(t, id, d.Approval.Request)
	assert.Empty(t, s.Requests(), "a denied call makes no new request")

	// Another call of the rule is asked, and its session grant does not
	// lift the denied call.
	other := before("git status").Approval.Request
	_, _, err = s.Approve(ctx, other, eval.GrantSession, "ana")
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, before("git status").Verdict)
	assert.Equal(t, policy.Allow, before("git log").Verdict)
	assert.Equal(t, policy.Block, before("git push").Verdict, "the denial wins over the session grant")

	// Revoked, the denial is gone: the session grant decides again.
	ok, err := s.Revoke(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, s.Denials())
	assert.Equal(t, policy.Allow, before("git push").Verdict)
}

// readsAsked asks before every read of phase resource.
const readsAsked = `rules:
  - id: ask-reads
    phase: resource
    verdict: ask
    reason: reads are asked
`

// TestReadApprovals: a read of phase resource has no call, so its request
// is bound to the read itself (eval.ReadCall): approving one resource
// once lets that read run once, and never another resource, a prompt or a
// tool call; a session grant covers the rule's reads of that server.
func TestReadApprovals(t *testing.T) {
	set := mustSet(t, map[string]string{"r.yaml": readsAsked})
	eng, err := eval.New(set, eval.WithApprover(deferAll), eval.WithApprovalRequests())
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	ctx := context.Background()
	read := func(r eval.Resource) eval.Decision {
		t.Helper()
		d, err := s.Resource(ctx, r)
		require.NoError(t, err)
		return d
	}
	doc := eval.Resource{Server: "docs", Kind: eval.KindResource, URI: "docs://a"}
	other := eval.Resource{Server: "docs", Kind: eval.KindResource, URI: "docs://secret"}
	prompt := eval.Resource{Server: "docs", Kind: eval.KindPrompt, Name: "summarize", Arguments: map[string]string{"topic": "a"}}

	d := read(doc)
	require.Equal(t, policy.Ask, d.Verdict)
	require.NotEmpty(t, d.Approval.Request)
	id := d.Approval.Request
	assert.Equal(t, id, read(doc).Approval.Request, "a retried read finds its own request")
	otherID := read(other).Approval.Request
	assert.NotEqual(t, id, otherID, "two reads share no request")
	promptID := read(prompt).Approval.Request
	assert.NotEqual(t, id, promptID)

	reqs := s.Requests()
	require.Len(t, reqs, 3)
	assert.True(t, reqs[0].Read)
	assert.Equal(t, "mcp__docs__resources/read", reqs[0].Tool)
	assert.Equal(t, map[string]any{"uri": "docs://a"}, reqs[0].Args)
	assert.Equal(t, "mcp__docs__prompts/get", reqs[2].Tool)

	_, _, err = s.Approve(ctx, id, eval.GrantOnce, "test")
	require.NoError(t, err)
	assert.Equal(t, policy.Ask, read(other).Verdict, "approving one read lets no other through")
	assert.Equal(t, policy.Ask, read(prompt).Verdict)
	d = read(doc)
	assert.Equal(t, policy.Allow, d.Verdict)
	assert.Equal(t, eval.ApprovalRemembered, d.Approval.Outcome)
	assert.Equal(t, policy.Ask, read(doc).Verdict, "once is once")

	_, _, err = s.Approve(ctx, otherID, eval.GrantSession, "test")
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, read(other).Verdict)
	assert.Equal(t, policy.Allow, read(eval.Resource{Server: "docs", Kind: eval.KindResource, URI: "docs://b"}).Verdict, "a session grant covers the rule's reads of that server")
	assert.Equal(t, policy.Ask, read(eval.Resource{Server: "wiki", Kind: eval.KindResource, URI: "wiki://a"}).Verdict, "and not another server's")
}
