package hooks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// DefaultTimeout bounds one hook invocation's wait for the session lock and
// its decision. It is well below the hosts' own hook timeouts (a host that
// times a hook out lets the call through).
const DefaultTimeout = 10 * time.Second

// Runner answers one hook event: it decodes the event, takes the session's
// lock, restores the session from the Store, decides, saves the state and
// encodes the decision. Whatever fails on the way is answered with
// Host.Fail: a block, unless FailOpen.
type Runner struct {
	Host Host
	// Engine returns the engine to decide with. It is called only for
	// events that need one, so that events celguard ignores never pay for
	// compiling policies; its error is answered as a failure.
	Engine func() (*eval.Engine, error)
	// Store is the state directory the sessions are kept in.
	Store *statedir.Dir
	// FailOpen lets calls through when celguard fails.
	FailOpen bool
	// Timeout bounds the lock wait and the decision; zero means
	// DefaultTimeout.
	Timeout time.Duration
}

// Run answers the event in input.
func (r *Runner) Run(ctx context.Context, input []byte) Response {
	ev, resp := Respond(ctx, r.Host, input, r.FailOpen, r.handle)
	if r.Store != nil && ev.Name != "" { // the event decoded
		// Cheap: one stat unless a cleanup is due. Its errors must not
		// change the answer.
		_, _ = r.Store.MaybeCleanup()
	}
	return resp
}

func (r *Runner) handle(ctx context.Context, ev Event) (Response, error) {
	if ev.Kind == KindIgnore {
		return r.Host.Encode(ev, eval.Decision{}), nil
	}
	if r.Engine == nil || r.Store == nil {
		return Response{}, fmt.Errorf("the hook runner has no engine or no state store")
	}
	if ev.Kind == KindSessionEnd {
		// The session's state stays: its counters, halts and grants are
		// what limits the agent, and the agent can send this event itself
		// (it runs as the user, so it can pipe one into `celguard hook`),
		// or reuse the id of a session that ended. Deleting it would let
		// the limited party reset its own limits. The state directory's
		// cleanup removes a session untouched for MaxAge (--keep-days), so
		// the directory stays bounded; the next prompt of a session resumed
		// with the id starts a new turn as any prompt does.
		return r.Host.Encode(ev, eval.Decision{}), nil
	}
	eng, err := r.Engine()
	if err != nil {
		if ev.Kind == KindTurnStart || ev.Kind == KindSessionStart {
			return r.promptThrough(ev, err), nil
		}
		return Response{}, err
	}
	if eng == nil {
		return Response{}, fmt.Errorf("no engine to decide with")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	locked, err := r.Store.Lock(ctx, ev.SessionID)
	if err != nil && ev.Kind == KindAfter {
		return Response{}, r.recordPending(ev, err)
	}
	if err != nil {
		return Response{}, err
	}
	defer locked.Close()
	sess, tampered, err := restore(eng, locked, ev)
	if err != nil {
		return Response{}, err
	}
	replayed, badPending, err := replay(ctx, locked, sess)
	if err != nil {
		return Response{}, err
	}
	// A Gemini answer is decided across its chunks (geministream.go);
	// every other event forgets the record.
	var d eval.Decision
	var stream *streamRecord
	if r.streams(ev) {
		d, stream, err = decideStream(ctx, sess, &ev, loadStream(locked))
	} else {
		d, err = Decide(ctx, sess, ev)
	}
	if err != nil {
		return Response{}, err
	}
	if err := saveStateStream(locked, sess.State(), stream); err != nil {
		return Response{}, err
	}
	// Applied, and saved: a failure to remove them would apply them again.
	if err := statedir.RemovePending(replayed); err != nil {
		return Response{}, err
	}
	return r.answer(ev, d, tampered, badPending), nil
}

// promptThrough answers a new prompt (or session) when there is no engine to decide
// with (policies that do not compile, a state key that cannot be used): the
// prompt goes through, with a warning the user sees that says why and what
// to fix, and every tool call of the turn fails closed as it comes (unless
// --fail-open). Refusing the prompt would leave the user with nothing to do
// but give up the session, and on some hosts without a word of why.
func (r *Runner) promptThrough(ev Event, err error) Response {
	reason := fmt.Sprintf("every tool call is refused until this is fixed: %v. Fix it (celguard lint lists every problem with its fix; docs/diagnostics.md explains each code); the next call after the fix is decided by the policies", err)
	if r.FailOpen {
		reason = fmt.Sprintf("tool calls run unguarded (--fail-open) until this is fixed: %v. Fix it (celguard lint lists every problem with its fix)", err)
	}
	resp := r.Host.Encode(ev, eval.Decision{Verdict: policy.Warn, Code: CodePoliciesUnavailable, Reason: reason})
	resp.Stderr += clip("celguard: "+reason) + "\n"
	return resp
}

// CodePoliciesUnavailable is the code of the warning a new prompt gets when
// celguard cannot decide (Runner.promptThrough).
const CodePoliciesUnavailable = "policies_unavailable"

// answer encodes the decision d of ev, saying on stderr that the state
// failed its check (tampered) or that pending after-events did (badPending).
func (r *Runner) answer(ev Event, d eval.Decision, tampered *statedir.TamperedError, badPending error) Response {
	// The decision of a call on a tampered state is marked by the engine
	// (eval's decide.go, rule 19); the user is told on stderr too.
	resp := r.Host.Encode(ev, d)
	if tampered != nil {
		resp.Stderr += clip("celguard: "+tampered.Error()+"; "+eval.TamperedConsequence) + "\n"
	}
	if badPending != nil {
		resp.Stderr += clip("celguard: "+badPending.Error()) + "\n"
	}
	return resp
}

// recordPending keeps an after-event whose session lock could not be taken
// (lockErr) for the session's next event to apply (pending.go), and returns
// the error the hook answers with: the after-phase rules did not run, so
// the event fails visibly either way.
func (r *Runner) recordPending(ev Event, lockErr error) error {
	if err := recordPending(r.Store, ev.SessionID, ev.Call, ev.Result); err != nil {
		return fmt.Errorf("%w; the call's counts are lost: %v", lockErr, err)
	}
	return fmt.Errorf("%w; the after-phase rules did not run on the result of %s, and its counts were recorded for the session's next event", lockErr, ev.Call.Tool)
}

// restore loads the session's state and rebuilds the session. A state that
// fails its check restores fail-closed (eval.Engine.RestoreTampered), and
// tampered says why.
func restore(eng *eval.Engine, locked *statedir.Locked, ev Event) (sess *eval.Session, tampered *statedir.TamperedError, err error) {
	st, _, err := loadState(locked, ev.SessionID)
	if errors.As(err, &tampered) {
		sess, err = eng.RestoreTampered(ev.SessionID, ev.Meta, untrusted(tampered), tampered)
		return sess, tampered, err
	}
	if err != nil {
		return nil, nil, err
	}
	// The latest metadata wins (the permission mode or model may change).
	if st.Meta == nil {
		st.Meta = map[string]any{}
	}
	maps.Copy(st.Meta, ev.Meta)
	sess, err = eng.RestoreSession(st)
	return sess, nil, err
}
