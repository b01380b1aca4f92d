package eval

import (
	"context"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// backend is where a session's state lives, chosen once, when the session
// is made (Engine.NewSession): in the session itself (localBackend), or
// committed through the engine's state.Store (storeSession,
// storesession.go). Deciding, approving, granting and turn code call the
// backend and never ask which one it is.
type backend interface {
	// decide decides one event of phase on the session's state: a call
	// (and its result after it), a turn's end, or the model's input or
	// output (io).
	decide(ctx context.Context, s *Session, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, io *modelIO, opts []CallOption) (Decision, error)
	// decided is told a before-decision once it is final (after the
	// decision sink): the local backend remembers a refused call then;
	// the stored one did, in the decision's commit.
	decided(s *Session, call Call, d Decision)
	// nextTurn begins a new turn.
	nextTurn(ctx context.Context, s *Session) (uint64, error)
	// change applies apply (a change of the session's own state that
	// fails without changing anything) and keeps it.
	change(ctx context.Context, s *Session, apply func() error) error
	// sync reads the session's state where it is kept; open starts or
	// resumes the session there.
	sync(ctx context.Context, s *Session) error
	open(ctx context.Context, s *Session) error
	// fleetHalt is a halt of the session's agent, repository or
	// organisation, if one is in force.
	fleetHalt(s *Session) *Decision
	// sharedCounts are the counts of counter c (scoped to an agent, a
	// repository or an organisation) where they are shared, nil to count
	// them in the session; the caller holds s.mu.
	sharedCounts(s *Session, c *compile.Counter) *counterState
	// touch records that the decision read or counted counter c.
	touch(c *compile.Counter)
	// answered is the approver's answer for key already given in this
	// decision (one that runs again asks once); noteAnswer keeps one.
	answered(key string) (Approval, bool)
	noteAnswer(key string, a Approval)
}

// localBackend keeps a session's state in the session: nothing is shared,
// a shared-scope counter counts as a session counter, and there are no
// fleet halts.
type localBackend struct{}

func (localBackend) decide(ctx context.Context, s *Session, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, io *modelIO, opts []CallOption) (Decision, error) {
	return s.decideLocal(ctx, set, phase, call, res, io, opts)
}

func (localBackend) decided(s *Session, call Call, d Decision) { s.rememberBefore(call, d) }

func (localBackend) nextTurn(_ context.Context, s *Session) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn++
	s.halt = nil
	return s.turn, nil
}

func (localBackend) change(_ context.Context, _ *Session, apply func() error) error { return apply() }

func (localBackend) sync(context.Context, *Session) error                  { return nil }
func (localBackend) open(context.Context, *Session) error                  { return nil }
func (localBackend) fleetHalt(*Session) *Decision                          { return nil }
func (localBackend) sharedCounts(*Session, *compile.Counter) *counterState { return nil }
func (localBackend) touch(*compile.Counter)                                {}
func (localBackend) answered(string) (Approval, bool)                      { return Approval{}, false }
func (localBackend) noteAnswer(string, Approval)                           {}
