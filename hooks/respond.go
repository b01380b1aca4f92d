package hooks

import (
	"context"
	"fmt"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// Respond answers one hook event, wherever it came from: a command hook's
// stdin (Runner), an HTTP hook's body (package serve) or a command hook
// forwarded to a server. It decodes input with host, hands the event to
// handle, and answers whatever fails on the way with host.Fail: an event
// that does not decode, an error from handle, a panic in it, or ctx having
// ended by the time handle returns. A failure is a block, unless failOpen;
// at turn end, where there is no call to refuse and a host reads a
// blocking answer to its stop event as "keep going", it is a non-blocking
// error, and so it is at a permission request. Respond runs handle in the caller's goroutine; a caller that must
// answer by a deadline whatever handle does runs Respond in another (as
// package serve does). It also returns the event (the zero Event with Host
// set when input did not decode), so that a caller can shape the answer
// for its transport (HTTPBody).
func Respond(ctx context.Context, host Host, input []byte, failOpen bool, handle func(context.Context, Event) (Response, error)) (ev Event, resp Response) {
	ev, err := host.Decode(input)
	if err != nil {
		ev = Event{Host: host.Name()}
		return ev, host.Fail(ev, fmt.Sprintf("cannot read the %s hook event: %v", host.Name(), err), failOpen)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	fail := func(err error) Response {
		// Nor at a permission request: the host asks the user anyway, and a
		// blocking answer would deny the call for celguard's own failure.
		return host.Fail(ev, fmt.Sprintf("%s event: %v", ev.Name, err), failOpen || ev.Kind == KindTurnEnd || ev.Kind == KindPermission)
	}
	defer func() {
		if p := recover(); p != nil {
			resp = fail(fmt.Errorf("internal error: %v", p))
		}
	}()
	resp, err = handle(ctx, ev)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("no decision in time: %w", context.Cause(ctx))
	}
	if err != nil {
		return ev, fail(err)
	}
	return ev, resp
}

// Decide applies one event that needs a session (KindTurnStart,
// KindInput, KindOutput, KindBefore, KindAfter, KindTurnEnd) to sess and
// returns the decision to encode: the zero Decision for a new turn without
// a prompt. KindPermission notes the host's permission request (the
// zero Decision: the host asks); other kinds change nothing.
func Decide(ctx context.Context, sess *eval.Session, ev Event) (eval.Decision, error) {
	var d eval.Decision
	var err error
	switch ev.Kind {
	case KindTurnStart:
		// With a state store the new turn is committed there, and a turn
		// that cannot start leaves a halt of the last one in force.
		if _, err := sess.NextTurn(ctx); err != nil {
			return d, fmt.Errorf("the turn could not start: %w", err)
		}
		if ev.Messages != nil {
			d, err = sess.Input(ctx, eval.Input{Messages: ev.Messages, Agent: ev.Call.Agent})
		}
	case KindInput:
		d, err = sess.Input(ctx, eval.Input{Messages: ev.Messages, Agent: ev.Call.Agent})
	case KindOutput:
		if ev.Output == nil {
			return d, fmt.Errorf("the %s event has no model output", ev.Name)
		}
		d, err = sess.Output(ctx, *ev.Output)
	case KindBefore:
		d, err = sess.Before(ctx, ev.Call)
	case KindPermission:
		return d, notePermission(ctx, sess, ev)
	case KindAfter:
		learnApproval(ctx, sess, ev)
		d, err = sess.After(ctx, ev.Call, ev.Result)
	case KindTurnEnd:
		if d, err = sess.EndTurn(ctx); err != nil {
			return d, fmt.Errorf("the end of the turn could not be decided: %w", err)
		}
	}
	switch {
	case err == nil:
		return d, nil
	case ev.Kind == KindBefore || ev.Kind == KindAfter:
		return d, fmt.Errorf("the %s call could not be decided: %w", ev.Call.Tool, err)
	case ev.Kind == KindOutput:
		return d, fmt.Errorf("the model's output could not be decided: %w", err)
	}
	return d, fmt.Errorf("the model's input could not be decided: %w", err)
}

// HTTPBody is the answer resp to ev as the body of an HTTP hook (Claude
// Code's "http" hooks), which has no exit code and no stderr: the host
// reads the JSON alone. An answer on stdout is the body as it is (an empty
// one is "{}", no decision). A failure that blocks through its exit code
// (exit 2, nothing on stdout) becomes the host's deny in JSON: for a call,
// the answer to a block Decision with code internal_error and the failure
// as its reason; for any other event (or one that did not decode), a
// top-level block that also stops the agent. A failure that does not block
// (failing open, exit 1) is "{}".
func HTTPBody(host Host, ev Event, resp Response) []byte {
	if len(resp.Stdout) > 0 {
		return resp.Stdout
	}
	if resp.Exit != 2 {
		return []byte("{}\n")
	}
	reason := strings.TrimSpace(resp.Stderr)
	if reason == "" {
		reason = "celguard failed"
	}
	if ev.Kind == KindBefore || ev.Kind == KindAfter {
		phase := policy.PhaseBefore
		if ev.Kind == KindAfter {
			phase = policy.PhaseAfter
		}
		d := eval.Refusal(phase, ev.Call.Tool, CodeInternalError, reason)
		if r := host.Encode(ev, d); len(r.Stdout) > 0 {
			return r.Stdout
		}
	}
	msg := clip(reason)
	return jsonResponse(hookOutput{Decision: "block", Reason: msg, Continue: stop(), StopReason: msg}).Stdout
}

// CodeInternalError is the code of a block celguard answers because it
// failed itself (HTTPBody).
const CodeInternalError = "internal_error"
