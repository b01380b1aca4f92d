package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// faultStore answers every commit with err, or, without one, with a
// conflict (a version no commit ever matches).
type faultStore struct {
	err     error
	commits int
}

func (f *faultStore) Commit(_ context.Context, ops []state.Op) (bool, []state.Entry, error) {
	f.commits++
	if f.err != nil {
		return false, nil, f.err
	}
	cur := make([]state.Entry, len(ops))
	for i := range cur {
		cur[i].Version = "someone-else"
	}
	return false, cur, nil
}

func (f *faultStore) Delete(context.Context, state.Key) error { return f.err }
func (f *faultStore) Close() error                            { return nil }

const sharedCap = `
counters:
  - name: calls
    phase: before
    scope: repository
    increment_when: 'true'
rules:
  - id: cap
    condition: 'counters.calls >= 2'
    verdict: block
`

// TestStoreFaultsFailClosed: a store that cannot be reached makes every
// decision a block with code store_unavailable; one where other replicas
// always win makes it a block with code store_conflict after the retries.
func TestStoreFaultsFailClosed(t *testing.T) {
	ctx := context.Background()
	set := mustSet(t, map[string]string{"cap.yaml": sharedCap})
	for _, tc := range []struct {
		name  string
		store *faultStore
		code  string
		tries int
	}{
		{"unreachable", &faultStore{err: errors.New("dial tcp 127.0.0.1:6379: connection refused")}, eval.CodeStoreUnavailable, 1},
		{"always changed elsewhere", &faultStore{}, eval.CodeStoreConflict, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := eval.New(set, eval.WithStore(tc.store), eval.WithStoreRetries(5))
			require.NoError(t, err)
			s := eng.NewSession("s", map[string]any{"repository": "r"})
			for _, phase := range []string{"before", "after", "turn_end"} {
				var d eval.Decision
				switch phase {
				case "before":
					d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
				case "after":
					d, err = s.After(ctx, eval.Call{Tool: "Bash"}, eval.Result{})
				default:
					d, err = s.EndTurn(ctx)
				}
				require.NoError(t, err)
				assert.Equal(t, policy.Block, d.Verdict, phase)
				assert.Equal(t, tc.code, d.Code, phase)
			}
			assert.Equal(t, 3*tc.tries, tc.store.commits)
			_, err = s.NextTurn(ctx)
			assert.ErrorContains(t, err, tc.code)
			assert.Equal(t, uint64(1), s.Turn(), "the turn did not change")
			assert.ErrorContains(t, eng.Halt(ctx, policy.ScopeOrg, "acme", "x"), tc.code)
		})
	}
}

// TestSharedScopeWithoutStore: without a store, a counter scoped to a
// repository counts like a session counter, and a fleet halt is refused.
func TestSharedScopeWithoutStore(t *testing.T) {
	ctx := context.Background()
	set := mustSet(t, map[string]string{"cap.yaml": sharedCap})
	eng, err := eval.New(set)
	require.NoError(t, err)
	meta := map[string]any{"repository": "r"}
	for _, id := range []string{"a", "b"} {
		s := eng.NewSession(id, meta)
		var allowed int
		for range 3 {
			d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			if d.Allowed() {
				allowed++
			}
		}
		assert.Equal(t, 2, allowed, "session %s counts on its own", id)
		assert.EqualValues(t, 2, s.State().Counters["cap/calls"].Keys[0].Count, "kept in the session's state (hook files)")
	}
	assert.ErrorContains(t, eng.Halt(ctx, policy.ScopeRepository, "r", "x"), "needs a state store")
	_, err = eval.New(set, eval.WithStore(nil))
	assert.Error(t, err)
	_, err = eval.New(set, eval.WithStoreTimeout(0))
	assert.Error(t, err)
	_, err = eval.New(set, eval.WithStoreRetries(0))
	assert.Error(t, err)
	_, err = eval.New(set, eval.WithStoreTimeout(time.Second), eval.WithStoreRetries(3))
	assert.NoError(t, err)
}

func TestScopeID(t *testing.T) {
	meta := map[string]any{"agent": map[string]any{"name": "claude"}, "repository": "github.com/acme/api", "org": 7}
	assert.Equal(t, "claude", eval.ScopeID(meta, policy.ScopeAgent))
	assert.Equal(t, "github.com/acme/api", eval.ScopeID(meta, policy.ScopeRepository))
	assert.Equal(t, "", eval.ScopeID(meta, policy.ScopeOrg), "not a string: the shared empty id")
	assert.Equal(t, "codex", eval.ScopeID(map[string]any{"agent": "codex"}, policy.ScopeAgent))
}

// TestApproveStoreFault: with a store that cannot be reached, an approval
// or a revoke is an error saying so, and nothing is recorded.
func TestApproveStoreFault(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	set := mustSet(t, map[string]string{"g.yaml": grantsPolicy})
	fs := &faultStore{}
	eng, err := eval.New(set, eval.WithApprover(deferAll), eval.WithApprovalRequests(), eval.WithStore(fs),
		eval.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	fs.err = errors.New("connection refused")
	_, _, err = s.Approve(ctx, "00000000", eval.GrantOnce, "test")
	require.ErrorContains(t, err, eval.CodeStoreUnavailable)
	_, err = s.Revoke(ctx, "00000000")
	require.ErrorContains(t, err, eval.CodeStoreUnavailable)
	assert.Empty(t, s.Grants())
}

// tamperStore holds one session entry that failed the store's check (as
// the signed state directory answers a file changed outside celguard)
// until a commit writes over it.
type tamperStore struct {
	fault     string
	untrusted []byte
	written   []byte
	version   string
}

func (f *tamperStore) Commit(_ context.Context, ops []state.Op) (bool, []state.Entry, error) {
	cur := make([]state.Entry, len(ops))
	for i, op := range ops {
		if op.Key.Scope != policy.ScopeSession {
			continue
		}
		cur[i] = state.Entry{Version: f.version, State: f.written}
		if f.written == nil {
			cur[i] = state.Entry{Version: "tampered", State: f.untrusted, Fault: f.fault}
		}
		if op.Version != cur[i].Version {
			return false, cur, nil
		}
	}
	for i, op := range ops {
		cur[i].State = nil
		if op.Key.Scope == policy.ScopeSession && op.Write != nil {
			f.written, f.version = op.Write, "v"+string(rune('a'+len(f.version)))
			cur[i] = state.Entry{Version: f.version}
		}
	}
	return true, cur, nil
}

func (f *tamperStore) Delete(context.Context, state.Key) error { return nil }
func (f *tamperStore) Close() error                            { return nil }

// TestStoredTamperedStateFailsClosed: a session entry the store says
// failed its check is restored fail-closed, as Engine.RestoreTampered
// does: its halt is kept (not its text), its counters saturate, the
// decision that found it is marked (rule 19), and the fail-closed state is
// written over it, so the next decision is not marked.
func TestStoredTamperedStateFailsClosed(t *testing.T) {
	ctx := context.Background()
	set := mustSet(t, map[string]string{"cap.yaml": `
counters:
  - name: calls
    phase: before
    scope: session
    increment_when: 'true'
rules:
  - id: cap
    condition: 'counters.calls >= 100'
    verdict: block
`})
	for _, tc := range []struct {
		name      string
		untrusted string
		verdict   policy.Verdict
	}{
		{"counts lowered", `{"id":"s","turn":1,"counters":{"cap/calls":{"turn":1,"keys":[{"key":"","count":0}]}}}`, policy.Block},
		{"halt kept", `{"id":"s","turn":1,"halted":{"verdict":"halt","reason":"written by the attacker"}}`, policy.Halt},
		{"not JSON", ``, policy.Block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &tamperStore{fault: "the session state was changed outside celguard (its MAC does not check)"}
			if tc.untrusted != "" {
				st.untrusted = []byte(tc.untrusted)
			}
			eng, err := eval.New(set, eval.WithStore(st))
			require.NoError(t, err)
			s := eng.NewSession("s", map[string]any{"user": "ana"})
			d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			assert.True(t, d.StateTampered)
			assert.Equal(t, tc.verdict, d.Verdict)
			assert.Contains(t, d.Reason, "changed outside celguard")
			assert.NotContains(t, d.Reason, "attacker", "the untrusted halt's text is not kept")
			require.NotNil(t, st.written, "the fail-closed state was written over the tampered one")
			assert.Contains(t, string(st.written), `"saturated"`)

			d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			assert.False(t, d.StateTampered, "the next decision is on the state written over it")
			assert.Equal(t, tc.verdict, d.Verdict, "still fail-closed until the counter resets")
		})
	}
}

// TestResumeSession: a handle resumed for one event takes the stored
// metadata under the event's (the latest wins, and the first commit writes
// it); on an entry that failed the store's check, nothing of which could
// be read, it starts fail-closed, says why (Tampered), and every decision
// of the handle is marked, not only the first.
func TestResumeSession(t *testing.T) {
	ctx := context.Background()
	set := mustSet(t, map[string]string{"m.yaml": `
rules:
  - id: both
    condition: 'session.mode == "default" && "model" in session'
    verdict: block
`})
	st := &tamperStore{fault: "the session state was changed outside celguard (not JSON)"}
	eng, err := eval.New(set, eval.WithStore(st))
	require.NoError(t, err)
	s, err := eng.ResumeSession(ctx, "s", map[string]any{"mode": "plan"})
	require.NoError(t, err)
	assert.Contains(t, s.Tampered(), "not JSON")
	for range 2 {
		d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
		assert.True(t, d.StateTampered, "every decision of a handle for one event is marked")
	}
	require.NotNil(t, st.written, "a state was written over the entry")

	// The next event: the stored metadata with the event's over it.
	s, err = eng.ResumeSession(ctx, "s", map[string]any{"model": "opus"})
	require.NoError(t, err)
	assert.Empty(t, s.Tampered())
	d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "mode plan kept from the first event")
	s, err = eng.ResumeSession(ctx, "s", map[string]any{"mode": "default"})
	require.NoError(t, err)
	d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Block, d.Verdict, "model kept from the second event, mode from this one")
	assert.Contains(t, string(st.written), `"model":"opus"`)
}

// recordStore is a store in memory that keeps, beside every state it was
// given, a copy of it as it was given, and fails every commit while err
// is set.
type recordStore struct {
	err      error
	entries  map[state.Key]state.Entry
	given    [][]byte // the bytes of every write, as the store holds them
	asGiven  [][]byte // their copies when they were given
	versions int
}

func (f *recordStore) Commit(_ context.Context, ops []state.Op) (bool, []state.Entry, error) {
	if f.err != nil {
		return false, nil, f.err
	}
	if f.entries == nil {
		f.entries = map[state.Key]state.Entry{}
	}
	cur := make([]state.Entry, len(ops))
	for _, op := range ops {
		if e := f.entries[op.Key]; e.Version != op.Version {
			for j, op := range ops {
				cur[j] = f.entries[op.Key]
			}
			return false, cur, nil
		}
	}
	for i, op := range ops {
		e := f.entries[op.Key]
		if op.Write != nil {
			f.versions++
			e = state.Entry{Version: fmt.Sprint("v", f.versions), State: op.Write}
			f.entries[op.Key] = e
			f.given, f.asGiven = append(f.given, op.Write), append(f.asGiven, bytes.Clone(op.Write))
		}
		cur[i].Version = e.Version
	}
	return true, cur, nil
}

func (f *recordStore) Delete(context.Context, state.Key) error { return nil }
func (f *recordStore) Close() error                            { return nil }

// TestStoreRollbackToCommitted: a decision the store cannot settle rolls
// the session back to the state last committed, which a decision keeps as
// the bytes it gave the store: counters, recent calls and labels are what
// they were after the last commit, and the next commit goes on from there.
// No state a store was given changes afterwards.
func TestStoreRollbackToCommitted(t *testing.T) {
	ctx := context.Background()
	set := mustSet(t, map[string]string{"c.yaml": `
counters:
  - name: calls
    phase: before
    scope: session
    key: 'tool'
    increment_when: 'true'
rules:
  - id: tag
    match: {tools: [Write]}
    condition: 'true'
    verdict: allow
    labels: {add: [wrote]}
  - id: cap
    condition: 'counters.calls >= 100'
    verdict: block
`})
	rs := &recordStore{}
	eng, err := eval.New(set, eval.WithStore(rs))
	require.NoError(t, err)
	s := eng.NewSession("s", map[string]any{"repository": "r"})
	calls := []eval.Call{
		{Tool: "Bash", Args: map[string]any{"command": "ls", "issue_id": 7}},
		{Tool: "Write", Args: map[string]any{"file_path": "a.go", "content": "x"}},
		{Tool: "Bash", Args: map[string]any{"command": "<b>&amp;</b>"}},
	}
	for _, c := range calls {
		d, err := s.Before(ctx, c)
		require.NoError(t, err)
		require.True(t, d.Allowed(), "%+v", d)
	}
	_, err = s.After(ctx, calls[0], eval.Result{Content: "ok"})
	require.NoError(t, err)
	committed, err := json.Marshal(s.State())
	require.NoError(t, err)
	for _, part := range []string{`"wrote"`, `"issue_id":"7"`, `"status":"ok"`, `"count":2`} {
		require.Contains(t, string(committed), part)
	}

	rs.err = errors.New("connection refused")
	for _, c := range calls {
		d, err := s.Before(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, eval.CodeStoreUnavailable, d.Code)
		got, _ := json.Marshal(s.State())
		assert.JSONEq(t, string(committed), string(got), "rolled back to the committed state")
	}

	rs.err = nil
	d, err := s.Before(ctx, calls[1])
	require.NoError(t, err)
	require.True(t, d.Allowed())
	st := s.State()
	assert.EqualValues(t, 4, st.RecentSeq, "one call recorded after the rollback")
	assert.Equal(t, "Write", st.Recent[len(st.Recent)-1].Tool)
	assert.EqualValues(t, 2, st.Counters["c/calls"].Keys[0].Count, "Write counted once more")
	for i := range rs.given {
		assert.Equal(t, rs.asGiven[i], rs.given[i], "write %d changed after it was given", i)
	}
	last := rs.entries[state.Key{Scope: policy.ScopeSession, ID: "s"}].State
	want, _ := json.Marshal(st)
	assert.Equal(t, string(want), string(last), "the store holds json.Marshal's bytes")
}
