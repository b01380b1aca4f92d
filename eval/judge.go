package eval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/internal/mask"
	"github.com/celguard/celguard/policy"
)

// A rule with `verdict: ask` and `judge: NAME` sends its call to the judge
// NAME before a person is asked (BitCode's llm verdict). The judge answers
// allow (the call runs), block (refused with the judge's reason, code
// judge_denied) or ask; an ask, a judge that is not configured, fails,
// times out (DefaultJudgeTimeout, WithJudgeTimeout) or answers anything
// else leaves the rule's ask, settled as any ask is. A judge never lifts a
// mandatory rule: its allow of a mandatory rule's call is an ask. Answers
// are cached per judge, rule and exact call (CallDigest) for the session,
// in its state; failures are not. Judges are deployment configuration
// (WithJudge; the judge package reads them from files and flags), never
// part of a policy file: a rule only names one.

// Judge decides a call a rule sends it.
type Judge interface {
	Judge(ctx context.Context, req JudgeRequest) (JudgeAnswer, error)
}

// JudgeFunc adapts a function to Judge.
type JudgeFunc func(ctx context.Context, req JudgeRequest) (JudgeAnswer, error)

// Judge implements Judge.
func (f JudgeFunc) Judge(ctx context.Context, req JudgeRequest) (JudgeAnswer, error) {
	return f(ctx, req)
}

// JudgeRequest is what a judge is asked. The call's arguments and the
// reason are masked as the decision log masks them (a policy's
// decision_log.mask paths, then every credential), since a judge's prompt
// may leave the machine; the call's digest, which caches the answer, is
// the exact call's.
type JudgeRequest struct {
	Judge     string
	SessionID string
	Rule      string
	Policy    string
	// Reason is the rule's reason for asking.
	Reason string
	Call   Call
}

// JudgeAnswer is a judge's answer: Verdict is policy.Allow, policy.Block or
// policy.Ask (anything else is read as ask).
type JudgeAnswer struct {
	Verdict policy.Verdict
	Reason  string
}

// JudgeRecord is what a judge said about a call, in the Decision.
type JudgeRecord struct {
	// Name is the judge's name, as the rule gives it.
	Name string `json:"name"`
	// Verdict is allow, block or ask: ask also when the judge could not
	// answer (Error says why).
	Verdict policy.Verdict `json:"verdict"`
	Reason  string         `json:"reason,omitempty"`
	// Cached says the answer was given earlier in the session for the same
	// call; the judge was not asked again.
	Cached bool `json:"cached,omitempty"`
	// Error says why the judge gave no answer (not configured, failed,
	// timed out, answered something else).
	Error string `json:"error,omitempty"`
}

// Judgment is a judge's cached answer in a session's state.
type Judgment struct {
	// Key is the judge, the rule and the call's digest.
	Key     string         `json:"key"`
	Verdict policy.Verdict `json:"verdict"`
	Reason  string         `json:"reason,omitempty"`
}

// DefaultJudgeTimeout bounds one judge's answer.
const DefaultJudgeTimeout = 5 * time.Second

// MaxJudgments bounds the answers a session keeps; past it the oldest is
// forgotten (the judge is asked again).
const MaxJudgments = 1024

// WithJudge makes j the judge rules name as name.
func WithJudge(name string, j Judge) Option {
	return func(c *config) error {
		if name == "" || j == nil {
			return errors.New("eval.WithJudge: a judge needs a name and an implementation")
		}
		if c.judges == nil {
			c.judges = map[string]Judge{}
		}
		c.judges[name] = j
		return nil
	}
}

// WithJudgeTimeout bounds each judge's answer; the default is
// DefaultJudgeTimeout.
func WithJudgeTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("eval.WithJudgeTimeout: %s is not a positive duration", d)
		}
		c.judgeTimeout = d
		return nil
	}
}

// judge asks rule r's judge about the call with digest: the answer, from
// the session's cache or the judge. A failure is an ask with Error set.
func (ev *evaluation) judge(d Decision, r *compile.Rule, digest string) JudgeRecord {
	s := ev.s
	key := r.Judge + "\x00" + r.ID + "\x00" + digest
	s.mu.Lock()
	cached, ok := s.judged[key]
	s.mu.Unlock()
	if ok {
		return JudgeRecord{Name: r.Judge, Verdict: cached.Verdict, Reason: cached.Reason, Cached: true}
	}
	rec := JudgeRecord{Name: r.Judge, Verdict: policy.Ask}
	j := s.eng.cfg.judges[r.Judge]
	if j == nil {
		rec.Error = "judge " + r.Judge + " is not configured"
		return rec
	}
	timeout := s.eng.cfg.judgeTimeout
	if timeout <= 0 {
		timeout = DefaultJudgeTimeout
	}
	ctx, cancel := context.WithTimeout(ev.ctx, timeout)
	defer cancel()
	call, reason := ev.maskedForJudge(d.Reason)
	var asked time.Time
	if ev.notes != nil {
		asked = time.Now()
	}
	ans, err := j.Judge(ctx, JudgeRequest{Judge: r.Judge, SessionID: s.id, Rule: r.ID, Policy: r.Policy.Name, Reason: reason, Call: call})
	ev.notes.judged(asked)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		rec.Error = fmt.Sprintf("judge %s did not answer within %s", r.Judge, timeout)
		return rec
	case err != nil:
		rec.Error = fmt.Sprintf("judge %s failed: %v", r.Judge, err)
		return rec
	case ans.Verdict != policy.Allow && ans.Verdict != policy.Block && ans.Verdict != policy.Ask:
		rec.Error = fmt.Sprintf("judge %s answered %s, not allow, block or ask", r.Judge, ans.Verdict)
		return rec
	}
	rec.Verdict, rec.Reason = ans.Verdict, ans.Reason
	s.mu.Lock()
	s.rememberJudgment(Judgment{Key: key, Verdict: ans.Verdict, Reason: ans.Reason})
	s.mu.Unlock()
	return rec
}

// rememberJudgment caches a judge's answer; the caller holds s.mu.
func (s *Session) rememberJudgment(j Judgment) {
	if s.judged == nil {
		s.judged = map[string]Judgment{}
	}
	if _, ok := s.judged[j.Key]; !ok {
		s.judgedOrder = append(s.judgedOrder, j.Key)
	}
	s.judged[j.Key] = j
	for len(s.judgedOrder) > MaxJudgments {
		delete(s.judged, s.judgedOrder[0])
		s.judgedOrder = s.judgedOrder[1:]
	}
}

// settleByJudge applies rule r's judge to its ask d: done is true when the
// judge settled it (allowed or refused), with the decision; otherwise rec
// is what the judge said, for the decision of the ask.
func (ev *evaluation) settleByJudge(d Decision, r *compile.Rule, digest string) (out Decision, rec *JudgeRecord, done bool) {
	jr := ev.judge(d, r, digest)
	rec = &jr
	if rec.Verdict == policy.Allow && !liftable(r) {
		rec.Verdict = policy.Ask
		rec.Error = "a judge does not lift a mandatory rule: a person is asked"
	}
	switch rec.Verdict {
	case policy.Allow:
		d.Verdict = policy.Allow
		d.Judge = rec
		if rec.Reason != "" {
			d.Reason = rec.Reason
		}
		return d, rec, true
	case policy.Block:
		reason := rec.Reason
		if reason == "" {
			reason = d.Reason
		}
		out = ev.refuse(CodeJudgeDenied, "judge "+rec.Name+": "+reason, r)
		out.Judge = rec
		return out, rec, true
	}
	return d, rec, false
}

// maskedForJudge is the call, and the rule's reason for asking, as a judge
// is shown them (JudgeRequest): masked as the decision log masks them
// (internal/mask: the trusted policies' decision_log.mask paths, then
// every credential), since a judge's prompt may leave the machine.
func (ev *evaluation) maskedForJudge(reason string) (Call, string) {
	call := ev.call
	var rules []mask.Rule
	for _, lm := range ev.set.LogMasks() {
		rules = append(rules, mask.Rule{Tools: lm.Tools, Paths: lm.Paths})
	}
	m := &mask.Masker{}
	if call.Args != nil {
		call.Args = m.Args("args", call.Args, mask.For(rules, call.Tool))
	}
	return call, m.Free(reason)
}
