// The verdict rules, all of them, for one call in one phase:
//
//  1. A halt stops the turn: every later call of the turn is refused, until StartTurn (halted, haltTurn).
//  2. After the call, the after-counters update before any rule runs (updateCounters, countereval.go). Before the call,
//     rules read the before-counters' counts of earlier calls; the call itself is counted only when its decision lets
//     it through (allow, warn, modify; an ask counts once approved), atomically with the decision (decideCounted).
//  3. The rules of the trusted layers whose tool matcher admits the tool are tried in evaluation order, and the first
//     that matches decides. The order is layer-major (docs/layers.md): mandatory rules first, by priority; then the
//     others by layer, highest first, and within a layer by priority; ties keep file order (PolicySet.Candidates).
//  4. A matching modify rule rewrites the call (or result) instead, and the rules are tried again from the top on
//     the rewritten call; each modify rule applies once, so no rewrite carries a call past a block.
//  5. A verdict that lets the call proceed carries the rewrite; an allow after a rewrite is a modify (carryRewrite).
//  6. An ask is settled by a remembered approval or the approver (ask, approve.go): approved allows, deferred
//     stays ask, anything else (no approver, an error, a denial) blocks. A request a person denied (Session.Deny)
//     blocks its exact call first, whatever grant there is.
//  7. When no rule decides, the set's default verdict applies before the call; after it, the result passes.
//  8. A failing condition or rewrite follows the rule's failure policy: open skips it, closed blocks (policy_error).
//  9. Every block the engine decides itself is made by Refusal (refuse, refusal): policy_error (rule 8), canceled (the
//     context ended), approval_required, approval_timeout, approval_denied (rule 6), judge_denied (a rule's judge
//     refused, judge.go), invalid_call (no tool name), rewrite_conflict (rule 11), call_refused (rule 14),
//     decision_log_failed (rule 17), store_unavailable and store_conflict (rule 18). Its halts are turn_halted (rule 1)
//     and fleet_halted (rule 18); its ask is untrusted_rewrite (rule 12); its mark is state_tampered (rule 19). Hosts
//     refuse with Refusal too (hooks' internal_error, serve's faults), so that every refusal celguard makes has one
//     shape.
// 10. An untrusted project's rules decide on their own, after the trusted ones, by rules 3, 4, 7 and 8, with their
//     own default (allow unless its policies set one). The stricter decision stands (Verdict.Strictness: allow < warn =
//     modify < ask < block < halt; a tie keeps the trusted one); a decision of the project says Untrusted. Rule 6
//     settles the ask that stands, once.
// 11. A rewrite by the untrusted project is decided again by the trusted rules, then by the project's, until the
//     project changes the call no more; past maxRewriteRounds the call is refused (rewrite_conflict).
// 12. Before the call, a call the untrusted project rewrote is at least asked (untrusted_rewrite): a repository may
//     restrict, never change what runs unseen. After the call its rewrites of the result apply as they are.
// 13. At turn end (EndTurn) the turn_end rules decide with no call, by rules 3, 7 (allow) and 8; their verdicts are
//     allow and warn (the parser's check); a halted turn's end is decided too (Session.decide).
// 14. An after-event whose call id names a call refused before it ran is refused (call_refused, calls.go).
// 15. The model's input (Session.Input) and output (Session.Output) are decided by the rules of phase input and output,
//     with no call, by rules 1, 3, 4, 5, 7 (allow: the default verdict is for tool calls), 8, 10 and 11; their verdicts
//     are allow, warn, block, halt and modify (the parser's check), a modify rewriting the messages or the output.
// 20. Which tools a client is shown (Session.Tools, the MCP proxy's tools/list) is decided per tool by the rules of
//     phase tools, with no call but the tool's name (tool, classes) and definition, by rules 1 (a halted turn hides
//     every tool), 3, 4, 5, 7 (allow), 8, 10 and 11; their verdicts are allow and warn (shown), block (hidden; its calls
//     are refused too) and modify (shown with the description rewritten). A read of an MCP resource or prompt
//     (Session.Resource) is decided by the rules of phase resource, with no call, by rules 1, 3, 6 (an ask is settled
//     as a call's), 7 (allow), 8 and 10; their verdicts are allow, warn, block, halt and ask, and a rule that lets the
//     read through adds its session labels.
// 16. A monitored rule (its policy says mode: monitor, or WithMonitor monitors every rule that is not mandatory) is
//     evaluated but decides nothing: when it matches (or fails under a closed failure policy, a would-be policy_error),
//     the first such rule is reported in Decision.Monitored with its would-be verdict, and evaluation goes on past it
//     as if it were absent; a monitored modify is not applied, a monitored ask not put to the approver, a monitored
//     halt halts nothing. Mandatory rules are never monitored (compile refuses mode: monitor on them).
// 17. A decision the decision sink cannot record is refused (decision_log_failed, decisionlog.go), unless the host
//     handles the sink's errors (WithDecisionSink).
// 18. With a state store (fleet.go, storesession.go): a halt of the session's agent, repository or organisation
//     (Engine.Halt) halts every call and result of its sessions (fleet_halted), before rule 1; a decision the store
//     cannot settle is refused: store_unavailable when it cannot be reached in time (unless every counter the decision
//     used opted into on_store_error: local, when the decision stands on the replica's state), store_conflict when
//     other replicas changed the state at every try.
// 19. A call or result decided on a state restored fail-closed (Engine.RestoreTampered, or with a state store an entry
//     the store says failed its check, state.Entry.Fault, storeadopt.go: the stored state failed its check) is marked StateTampered, with the fault and its consequence in the reason: an allow becomes a warn with
//     code state_tampered that names no rule (celguard decides it, not the rule that allowed), any other verdict
//     keeps its code, or takes state_tampered when it has none (markTampered).

package eval

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// maxRewriteRounds bounds rule 11: the rounds of a trusted and an untrusted
// pass over a call the untrusted project keeps rewriting.
const maxRewriteRounds = 8

// run decides the call and completes the trace and the explanation.
func (ev *evaluation) run() (Decision, error) {
	d, err := ev.decide()
	d.Monitored = ev.monitored
	if _, none := ev.obs.(noObserver); none {
		return d, err // finish would return d as it is: a copy less
	}
	return ev.obs.finish(d), err
}

// decide applies rules 2 to 12.
func (ev *evaluation) decide() (Decision, error) {
	if ev.phase == policy.PhaseBefore && len(ev.set.CountersAt(policy.PhaseBefore)) > 0 {
		return ev.decideCounted()
	}
	if ev.phase == policy.PhaseAfter {
		if d, failed, err := ev.updateCounters(); failed {
			return d, err
		}
	}
	return ev.decideRules()
}

// decideRules applies rules 3 to 12.
func (ev *evaluation) decideRules() (Decision, error) {
	if !ev.set.HasUntrusted() {
		t := ev.runTrack(false)
		return ev.settle(&t, t.modified)
	}
	var modified []string // the modify rules applied, in order, by both tracks
	var rewrites []string // the untrusted project's rewrites that changed the call (rule 12)
	for range maxRewriteRounds {
		t := ev.runTrack(false)
		modified = append(modified, t.modified...)
		if t.final {
			return t.refusal(modified)
		}
		args, content, io := ev.call.Args, ev.resultContent(), ev.modelIO()
		u := ev.runTrack(true)
		modified = append(modified, u.modified...)
		if u.final {
			return u.refusal(modified)
		}
		if len(u.modified) == 0 || content == ev.resultContent() && reflect.DeepEqual(args, ev.call.Args) && reflect.DeepEqual(io, ev.modelIO()) {
			if u.d.Verdict.Strictness() > t.d.Verdict.Strictness() {
				t = u
			}
			settled := ev.askUntrustedRewrite(t, rewrites)
			return ev.settle(&settled, modified)
		}
		rewrites = append(rewrites, u.modified...)
	}
	d := ev.refuse(CodeRewriteConflict, fmt.Sprintf("the untrusted project's rewrites of the call did not settle with the trusted rules' in %d rounds", maxRewriteRounds), nil)
	d.Modified = modified
	return d, nil
}

// askUntrustedRewrite applies rule 12: before the call, a decision laxer
// than ask on a call the untrusted project rewrote becomes an ask, made by
// its last rewrite, so that no repository changes what runs unseen.
func (ev *evaluation) askUntrustedRewrite(t trackDecision, rewrites []string) trackDecision {
	if ev.phase != policy.PhaseBefore || len(rewrites) == 0 || t.final || t.d.Verdict.Strictness() >= policy.Ask.Strictness() {
		return t
	}
	r, _ := ev.set.Rule(rewrites[len(rewrites)-1])
	d := ev.fromRule(r)
	d.Verdict, d.Code = policy.Ask, CodeUntrustedRewrite
	d.Reason = fmt.Sprintf("The untrusted project's rule %s (%s:%d) rewrites this call: approve to run the rewritten call, "+
		"or run `celguard trust` in the project to let its rewrites apply. %s", r.ID, r.Pos.File, r.Pos.Line, d.Reason)
	return trackDecision{d: d, rule: r}
}

// trackDecision is what one track decided, before an ask is settled.
type trackDecision struct {
	d Decision
	// rule is the rule that decided; nil for a default verdict.
	rule *compile.Rule
	// modified lists the modify rules the track applied, in order.
	modified []string
	// final marks a refusal (policy_error, canceled) that stands as it is.
	final bool
	err   error
}

// refusal returns a final decision, naming every rewrite applied before it
// (modified, of both tracks) when it names any.
func (t trackDecision) refusal(modified []string) (Decision, error) {
	if t.d.Modified != nil {
		t.d.Modified = modified
	}
	return t.d, t.err
}

// runTrack applies rules 3, 4, 7 and 8 to the rules of one track: the
// trusted layers', or the untrusted project's.
func (ev *evaluation) runTrack(untrusted bool) trackDecision {
	var modified []string // the modify rules applied, in order
passes:
	for {
		ev.obs.startPass(untrusted)
		cands := ev.candidates(untrusted)
		for _, r := range cands {
			if err := ev.ctx.Err(); err != nil {
				return ev.canceled(err)
			}
			if r.Verdict == policy.Modify && slices.Contains(modified, r.ID) {
				ev.obs.step(r, OutcomeAlreadyApplied, nil)
				continue
			}
			matched, err := ev.matches(r)
			if err == nil && !matched {
				ev.obs.step(r, OutcomeNoMatch, nil)
				continue
			}
			if ev.isMonitored(r) {
				ev.monitor(r, err)
				continue
			}
			if err == nil && r.Verdict != policy.Modify {
				ev.obs.step(r, OutcomeMatched, nil)
				if len(r.Labels) > 0 {
					ev.labelled = append(ev.labelled, r)
				}
				return trackDecision{d: ev.fromRule(r), rule: r, modified: modified}
			}
			if err == nil {
				err = ev.applyModify(r)
			}
			if err != nil {
				if cerr := ev.ctx.Err(); cerr != nil {
					return ev.canceled(cerr)
				}
				if d, closed := ev.ruleFailed(r, err, modified); closed {
					return trackDecision{d: d, modified: modified, final: true}
				}
				continue
			}
			ev.obs.step(r, OutcomeApplied, nil)
			modified = append(modified, r.ID)
			ev.resetCall()
			continue passes // start again from the top with the rewritten call
		}
		return ev.noRuleDecides(untrusted, modified)
	}
}

// resultContent is the result content after the call, "" before it.
func (ev *evaluation) resultContent() string {
	if ev.res == nil {
		return ""
	}
	return ev.res.Content
}

// modelIO is a copy of the model's input or output (the zero modelIO in
// the other phases), to tell whether a rewrite changed it.
func (ev *evaluation) modelIO() modelIO {
	if ev.io == nil {
		return modelIO{}
	}
	return ev.io.clone()
}

// isMonitored reports whether r is monitored (rule 16).
func (ev *evaluation) isMonitored(r *compile.Rule) bool {
	return !r.Mandatory && (r.Policy.Monitored || ev.s.eng.cfg.monitorAll)
}

// monitor records what monitored rule r, whose condition matched (or
// failed with err), would have decided, if it is the first (rule 16).
func (ev *evaluation) monitor(r *compile.Rule, err error) {
	if err != nil && r.FailurePolicy == policy.FailOpen {
		ev.obs.step(r, OutcomeError, err)
		return
	}
	ev.obs.step(r, OutcomeMonitored, err)
	if ev.monitored != nil {
		return
	}
	m := &Monitored{RuleRef: r.Ref(), Untrusted: r.Policy.Untrusted}
	if err != nil {
		d := ev.policyError(r, err, nil)
		m.Verdict, m.Code, m.Reason, m.Error, m.Metadata = d.Verdict, d.Code, d.Reason, d.Error, d.Metadata
	} else {
		d := ev.fromRule(r)
		m.Verdict, m.Code, m.Reason, m.Metadata = d.Verdict, d.Code, d.Reason, d.Metadata
	}
	ev.monitored = m
}

// matches evaluates r's condition; a rule without one always matches.
func (ev *evaluation) matches(r *compile.Rule) (bool, error) {
	if r.Condition == nil {
		return true, nil
	}
	matched, err := ev.evalBool(r.Policy, r.Condition)
	ev.obs.conditionDone(r)
	return matched, err
}

// ruleFailed applies r's failure policy to the error of its condition or
// rewrite: open skips the rule (closed is false), closed blocks the call.
func (ev *evaluation) ruleFailed(r *compile.Rule, err error, modified []string) (d Decision, closed bool) {
	ev.obs.step(r, OutcomeError, err)
	if r.FailurePolicy == policy.FailOpen {
		return Decision{}, false
	}
	return ev.policyError(r, err, modified), true
}

// settle is the decision of t: an ask settled (rule 6), and the rewrites
// applied (modified) carried (rule 5); a rewritten call a default lets
// through is reported by the last rewrite. A refusal stands as it is. t is
// read, not kept (a pointer: a track's decision is 480 bytes).
func (ev *evaluation) settle(t *trackDecision, modified []string) (Decision, error) {
	if t.final {
		return t.d, t.err
	}
	d := t.d
	var err error
	switch {
	case t.rule != nil && t.d.Verdict == policy.Ask:
		d, err = ev.ask(d, t.rule)
	case t.rule == nil && len(modified) > 0 && d.Verdict == policy.Allow:
		last, _ := ev.set.Rule(modified[len(modified)-1])
		d = ev.fromRule(last)
		d.Verdict = policy.Allow
	}
	ev.carryRewrite(&d, modified)
	return d, err
}

// noRuleDecides is the decision of a track where no rule decided: its
// default verdict before the call, allow after it.
func (ev *evaluation) noRuleDecides(untrusted bool, modified []string) trackDecision {
	d := Decision{Phase: ev.phase, Tool: ev.call.Tool, Verdict: policy.Allow, Untrusted: untrusted}
	if ev.phase == policy.PhaseBefore && untrusted {
		d.Verdict = ev.set.UntrustedDefaultVerdict()
	} else if ev.phase == policy.PhaseBefore {
		d.Verdict = ev.set.DefaultVerdict()
	}
	return trackDecision{d: d, modified: modified}
}

// carryRewrite records the modify rules applied. The rewritten call (or
// result) goes with every verdict that lets it proceed, never with a block
// or a halt; an allow that follows a rewrite is reported as modify, so a
// host that applies rewrites only on modify still applies it.
func (ev *evaluation) carryRewrite(d *Decision, modified []string) {
	if len(modified) == 0 {
		return
	}
	d.Modified = modified
	switch d.Verdict {
	case policy.Block, policy.Halt:
		d.Args, d.Content, d.Messages, d.Output, d.Description = nil, nil, nil, nil, nil
		return
	case policy.Allow:
		d.Verdict = policy.Modify
	}
	switch ev.phase {
	case policy.PhaseBefore:
		d.Args = ev.call.Args
	case policy.PhaseAfter:
		c := ev.res.Content
		d.Content = &c
	case policy.PhaseInput:
		d.Messages = slices.Clone(ev.io.messages)
	case policy.PhaseOutput:
		o := *ev.io.output
		d.Output = &o
	case policy.PhaseTools:
		desc := ev.io.tool.Description
		d.Description = &desc
	}
}

// fromRule is the decision rule r makes: its verdict, code, and its message
// (or reason when the message fails).
func (ev *evaluation) fromRule(r *compile.Rule) Decision {
	d := Decision{Phase: ev.phase, Tool: ev.call.Tool, Verdict: r.Verdict, Code: r.Code, Reason: r.Reason, Untrusted: r.Policy.Untrusted}
	d.RuleRef = r.Ref()
	d.Metadata = maps.Clone(r.Metadata)
	if r.Message != nil {
		out, err := ev.eval(r.Policy, r.Message)
		if s, ok := out.(types.String); ok && err == nil {
			d.Reason = string(s)
		} else if err != nil {
			d.Reason = strings.TrimSpace(r.Reason + " (message failed: " + err.Error() + ")")
		}
	}
	return d
}

// refuse is the one constructor of the blocks the engine decides itself to
// fail closed: code says why, r (if not nil) is the rule concerned, and the
// decision carries no rewrite.
func (ev *evaluation) refuse(code, reason string, r *compile.Rule) Decision {
	return refusal(ev.phase, ev.call.Tool, code, reason, r)
}

// Refusal is a block celguard decides itself, not a rule (decide.go, rule
// 9): of a call of tool in phase, with a stable code and a reason. The
// engine's refusals are made with it, and so are the hosts' (a hook that
// failed, a decision server's fault), which add what they know (the call's
// id and agent, the time).
func Refusal(phase policy.Phase, tool, code, reason string) Decision {
	return Decision{Phase: phase, Tool: tool, Verdict: policy.Block, Code: code, Reason: reason}
}

// refusal is Refusal made by rule r (its identity and metadata), if any.
func refusal(phase policy.Phase, tool, code, reason string, r *compile.Rule) Decision {
	d := Refusal(phase, tool, code, reason)
	if r != nil {
		d.RuleRef = r.Ref()
		d.Untrusted, d.Metadata = r.Policy.Untrusted, maps.Clone(r.Metadata)
	}
	return d
}

// policyError refuses the call because rule r failed under a closed
// failure policy.
func (ev *evaluation) policyError(r *compile.Rule, err error, modified []string) Decision {
	d := ev.refuse(CodePolicyError, fmt.Sprintf("rule %s of policy %s failed: %v", r.ID, r.Policy.Name, err), r)
	d.Error, d.Modified = err.Error(), modified
	return d
}

// canceled refuses the call because the context ended before a decision.
func (ev *evaluation) canceled(err error) trackDecision {
	return trackDecision{d: ev.refuse(CodeCanceled, "the decision was not finished: "+err.Error(), nil), final: true, err: err}
}

// halted returns the refusal of a call in a turn an earlier call halted
// (rule 1), if it is. A halt stays a halt, naming the rule that halted.
func (s *Session) halted(phase policy.Phase, tool string) (Decision, bool) {
	s.mu.Lock()
	h := s.halt
	s.mu.Unlock()
	if h == nil {
		return Decision{}, false
	}
	d := Decision{Phase: phase, Tool: tool, Verdict: policy.Halt, Code: CodeTurnHalted, Reason: "this turn was halted: " + h.Reason}
	d.RuleRef = h.RuleRef
	d.Metadata = maps.Clone(h.Metadata)
	return d, true
}

// haltTurn makes a halt hold for the rest of the turn.
func (s *Session) haltTurn(d Decision) {
	if d.Verdict == policy.Halt {
		h := d
		s.mu.Lock()
		s.halt = &h
		s.mu.Unlock()
	}
}
