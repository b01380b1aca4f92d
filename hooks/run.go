package hooks

import (
	"context"
	"fmt"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// DefaultTimeout bounds one hook invocation's wait for the session lock and
// its decision. It is well below the hosts' own hook timeouts (a host that
// times a hook out lets the call through).
const DefaultTimeout = daemonwire.DefaultTimeout

// Runner answers one hook event: it decodes the event, holds the session
// in the state directory for the event (store.File.Hold), resumes the
// session from it through the engine's state store (eval.Store, as serve's
// sessions are), applies the session's pending after-events, decides,
// and encodes the decision; every change of the session's state is
// committed by the engine. Whatever fails on the way is answered with
// Host.Fail: a block, unless FailOpen.
type Runner struct {
	Host Host
	// Engine returns the engine to decide with, which keeps its sessions
	// in the file store of Store (eval.WithStore(store.NewFileDir(Store)),
	// set as celguard.Config.Store): an engine with another store, or none,
	// is a failure. It is called only for events that need one, so that
	// events celguard ignores never pay for compiling policies; its error
	// is answered as a failure. A process that answers many events (a
	// daemon) returns the same engine each time.
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
	file, ok := eng.Store().(*store.File)
	if !ok || file.Dir() != r.Store {
		return Response{}, fmt.Errorf("the engine does not keep its sessions in the hook's state directory %s", r.Store.Dir)
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

	held, err := file.Hold(ctx, ev.SessionID)
	if err != nil && ev.Kind == KindAfter {
		return Response{}, r.recordPending(ev, err)
	}
	if err != nil {
		return Response{}, err
	}
	answered := false
	defer func() { _ = held.Release(answered) }()
	// The session as stored, with the event's metadata over its own.
	sess, err := eng.ResumeSession(ctx, ev.SessionID, ev.Meta)
	if err != nil {
		return Response{}, err
	}
	tampered := sess.Tampered()
	badPending, err := replay(ctx, held, sess)
	if err != nil {
		return Response{}, err
	}
	d, err := r.decide(ctx, sess, &ev)
	if err != nil {
		return Response{}, err
	}
	answered = true
	return r.answer(ev, d, tampered, badPending), nil
}

// decide decides ev on the session. A Gemini answer is decided across its
// chunks, with a record kept in the session's state (geministream.go);
// every other event forgets the record.
func (r *Runner) decide(ctx context.Context, sess *eval.Session, ev *Event) (eval.Decision, error) {
	if ev.Kind == KindSessionStart {
		// The session's state, its metadata with it, is written (or an
		// existing session's metadata brought up to date), as serve opens
		// a session at its start.
		if err := sess.Open(ctx); err != nil {
			return eval.Decision{}, fmt.Errorf("the session could not start: %w", err)
		}
	}
	if !r.streams(*ev) {
		d, err := Decide(ctx, sess, *ev)
		if err == nil && sess.Stream() != nil {
			err = sess.SetStream(ctx, nil)
		}
		return d, err
	}
	d, rec, err := decideStream(ctx, sess, ev, loadStream(sess))
	if err != nil {
		return d, err
	}
	return d, saveStream(ctx, sess, rec)
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
// failed its check (tampered: why, Session.Tampered) or that pending
// after-events did (badPending).
func (r *Runner) answer(ev Event, d eval.Decision, tampered string, badPending error) Response {
	// The decision of a call on a tampered state is marked by the engine
	// (eval's decide.go, rule 19); the user is told on stderr too.
	resp := r.Host.Encode(ev, d)
	if tampered != "" {
		resp.Stderr += clip("celguard: "+tampered) + "\n"
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
