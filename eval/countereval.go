package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// This file is the evaluation's side of the counters: their keys, the counts
// rules read, the update after a call (after-counters) and the count at the
// decision before it (before-counters). counterstate.go keeps the counts.

// counterKey computes a counter's key for this call. A counter without a
// key counts every call it applies to under one key, AllCallsKey (it used
// to count each tool apart; CHANGELOG.md).
func (ev *evaluation) counterKey(c *compile.Counter) (string, error) {
	if k, ok := ev.keys[c]; ok {
		return k, nil
	}
	key := AllCallsKey
	if c.Key != nil {
		saved := ev.cur
		ev.cur = c.Policy
		out, err := ev.exec(c.Key)
		ev.cur = saved
		if err != nil {
			return "", fmt.Errorf("counter %s key: %w", c.ID, err)
		}
		s, ok := out.(types.String)
		if !ok {
			return "", fmt.Errorf("counter %s key is %s, not a string", c.ID, out.Type())
		}
		key = boundKey(string(s))
	}
	if ev.keys == nil {
		ev.keys = map[*compile.Counter]string{}
	}
	ev.keys[c] = key
	return key, nil
}

// AllCallsKey is the one key of a counter declared without a key: it counts
// every call the counter applies to, whatever the tool. It is empty so that
// no key expression (whose value is the key as written) collides with it
// unless it returns "" itself.
const AllCallsKey = ""

// maxKeyLen bounds the length of a counter key the session keeps: a longer
// key (a policy keyed on large arguments) is kept as its first 64 bytes and
// the SHA-256 of the whole, so memory and state files stay bounded and keys
// stay distinct.
const maxKeyLen = 256

func boundKey(k string) string {
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return k[:64] + "#" + hex.EncodeToString(sum[:])
}

// counterValues returns the counts of a policy's counters for this call. A
// counter whose key fails to compute is absent, so reading it is an error
// that the rule's failure policy handles.
func (ev *evaluation) counterValues(p *compile.Policy) map[string]int64 {
	if m, ok := ev.counters[p]; ok {
		return m
	}
	m := make(map[string]int64, len(p.Counters))
	for _, c := range p.Counters {
		ev.s.be.touch(c)
		if !ev.phase.HasCall() {
			// At turn end, input and output: the total over every key.
			m[c.Name] = ev.s.counterTotal(c)
			ev.notes.readCounter(c, AllCallsKey, m[c.Name])
			continue
		}
		key, err := ev.counterKey(c)
		if err != nil {
			continue
		}
		m[c.Name] = ev.s.counterValue(c, key)
		ev.notes.readCounter(c, key, m[c.Name])
	}
	if ev.counters == nil {
		ev.counters = map[*compile.Policy]map[string]int64{}
	}
	ev.counters[p] = m
	return m
}

// counterUpdate is what one counter does after a call.
type counterUpdate struct {
	c          *compile.Counter
	key        string
	inc, reset bool
	streak     *string
	// by is the weight of the increment (weight), 1 without one.
	by int64
}

// updateCounters runs every after-counter's reset_when and increment_when
// after a call, then applies them all at once (rule 2). A counter expression
// that fails under a closed failure policy blocks the result (failed is
// true, and so is it when the context ended).
func (ev *evaluation) updateCounters() (d Decision, failed bool, err error) {
	updates, d, failed, err := ev.counterUpdates(ev.set.CountersAt(policy.PhaseAfter))
	if failed {
		return d, true, err
	}
	ev.s.applyUpdates(updates)
	// After-phase rules see the updated counts.
	ev.counters = nil
	return Decision{}, false, nil
}

// decideCounted decides a call before it runs with the before-counters
// (rule 2): the rules read the counts of earlier calls, and the call is
// counted only when the decision lets it through (Decision.Allowed: an
// approved ask is an allow, so it counts at its approval; a deferred ask
// does not count). Counting is evaluated on the call as it will run (after
// its rewrites). The session's counting lock is held from the first count
// read to the increment, so concurrent decisions on one session against a
// cap of K let exactly K calls through; an approver asked meanwhile holds
// up the session's other before-decisions.
func (ev *evaluation) decideCounted() (Decision, error) {
	s := ev.s
	s.counting.Lock()
	defer s.counting.Unlock()
	d, err := ev.decideRules()
	if err != nil || !d.Allowed() {
		return d, err
	}
	updates, fd, failed, err := ev.counterUpdates(ev.set.CountersAt(policy.PhaseBefore))
	if failed {
		return fd, err
	}
	s.applyUpdates(updates)
	return d, nil
}

// counterUpdates evaluates the expressions of counters for this call. A
// counter expression that fails under a closed failure policy refuses the
// call (failed is true, and so is it when the context ended).
func (ev *evaluation) counterUpdates(counters []*compile.Counter) (updates []counterUpdate, d Decision, failed bool, err error) {
	for _, c := range counters {
		if err := ev.ctx.Err(); err != nil {
			t := ev.canceled(err)
			return nil, t.d, true, t.err
		}
		u, err := ev.counterUpdate(c)
		if err != nil || u.inc || u.reset {
			ev.s.be.touch(c) // counted, reset or failed: it needed the store
		}
		if err != nil {
			if c.Policy.FailurePolicy == policy.FailOpen {
				continue
			}
			d := ev.refuse(CodePolicyError, fmt.Sprintf("policy %s failed: %v", c.Policy.Name, err), nil)
			d.Policy, d.File, d.Error, d.Untrusted = c.Policy.Name, c.Policy.File, err.Error(), c.Policy.Untrusted
			return nil, d, true, nil
		}
		updates = append(updates, u)
	}
	return updates, Decision{}, false, nil
}

// applyUpdates applies the counter updates of one call at once: each
// counter's reset, then its increment.
func (s *Session) applyUpdates(updates []counterUpdate) {
	if len(updates) == 0 {
		return
	}
	now := s.eng.cfg.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range updates {
		cs := s.counterFor(u.c)
		switch {
		case u.reset && u.c.Decl.ResetAll:
			// reset: all clears every key; a saturated counter stays
			// saturated (its lost keys are not known, so none is lifted).
			cs.clear()
		case u.reset:
			cs.reset(u.key)
			s.unsaturate(u.c, u.key)
		}
		if u.inc {
			cs.increment(u.key, u.c.Decl.Window, now, s.eng.cfg.maxCounterKeys, s.eng.cfg.maxWindowEvents, u.streak, u.by)
		}
	}
}

// counterUpdate evaluates one counter's expressions for this call.
func (ev *evaluation) counterUpdate(c *compile.Counter) (counterUpdate, error) {
	u := counterUpdate{c: c}
	key, err := ev.counterKey(c)
	if err != nil {
		return u, err
	}
	u.key = key
	if c.IncrementWhen != nil {
		if u.inc, err = ev.evalBool(c.Policy, c.IncrementWhen); err != nil {
			return u, fmt.Errorf("counter %s increment_when: %w", c.ID, err)
		}
	}
	u.by = 1
	if u.inc && c.Weight != nil {
		out, err := ev.eval(c.Policy, c.Weight)
		if err != nil {
			return u, fmt.Errorf("counter %s weight: %w", c.ID, err)
		}
		n, ok := out.(types.Int)
		if !ok || n < 0 {
			return u, fmt.Errorf("counter %s weight is %v, not an int of 0 or more", c.ID, out)
		}
		u.by = int64(n)
	}
	if u.inc && c.Streak != nil {
		v, err := ev.streakValue(c)
		if err != nil {
			return u, fmt.Errorf("counter %s streak: %w", c.ID, err)
		}
		u.streak = &v
	}
	if c.ResetWhen != nil {
		if u.reset, err = ev.evalBool(c.Policy, c.ResetWhen); err != nil {
			return u, fmt.Errorf("counter %s reset_when: %w", c.ID, err)
		}
	}
	return u, nil
}

// streakValue is the value of a streak counter's expression: a string as
// it is, anything else in its canonical form.
func (ev *evaluation) streakValue(c *compile.Counter) (string, error) {
	out, err := ev.eval(c.Policy, c.Streak)
	if err != nil {
		return "", err
	}
	if s, ok := out.(types.String); ok {
		return string(s), nil
	}
	return stdlib.Canonical(out)
}
