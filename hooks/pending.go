package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/store/statedir"
)

// An after-event whose session lock cannot be taken in time comes after the
// tool ran: dropping it would lose its counts. It is written instead as a
// pending file of the state directory (statedir.Dir.RecordPending), and
// the next event that takes the lock replays it (After on the restored
// session) before deciding, then removes it. The hook still answers the
// event as a failure: the after-phase rules did not run on that result.

// pendingEvent is an after-event that waits for its session's lock.
type pendingEvent struct {
	Call   eval.Call   `json:"call"`
	Result eval.Result `json:"result"`
}

// recordPending writes an after-event that could not take its session's
// lock, for the session's next event to replay.
func recordPending(dir *statedir.Dir, sessionID string, call eval.Call, res eval.Result) error {
	raw, err := json.Marshal(pendingEvent{Call: call, Result: res})
	if err != nil {
		return fmt.Errorf("cannot encode the pending after-event: %w", err)
	}
	return dir.RecordPending(sessionID, raw)
}

// replay applies the session's pending after-events to sess, oldest first,
// and returns the files to remove once the state is saved. A pending file
// that fails its check is not applied; its error says so, and it is
// removed too.
func replay(ctx context.Context, ls *statedir.Locked, sess *eval.Session) (done []string, bad error, err error) {
	events, failed, bad, err := ls.Pending()
	if err != nil {
		return nil, nil, err
	}
	done = failed
	for _, pe := range events {
		var p pendingEvent
		if err := json.Unmarshal(pe.Event, &p); err != nil {
			bad = errors.Join(bad, fmt.Errorf("the pending after-event %s is signed but not valid: %w", pe.File, err))
			done = append(done, pe.File)
			continue
		}
		if _, err := sess.After(ctx, p.Call, p.Result); err != nil {
			return nil, bad, fmt.Errorf("the pending after-event of %s could not be applied: %w", p.Call.Tool, err)
		}
		done = append(done, pe.File)
	}
	return done, bad, nil
}

// loadState reads session id's state under its lock: the state of a new
// session when there is none.
func loadState(ls *statedir.Locked, id string) (eval.SessionState, bool, error) {
	st := eval.SessionState{ID: id}
	raw, found, err := ls.Load()
	if err != nil || !found {
		return st, found, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, false, fmt.Errorf("the session state %s is signed but not valid (%v); delete it to start the session afresh", ls.Path(), err)
	}
	return st, true, nil
}

// saveState writes a session's state under its lock.
func saveState(ls *statedir.Locked, st eval.SessionState) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cannot encode the session state: %w", err)
	}
	_, err = ls.Save(raw)
	return err
}

// untrusted decodes what could be read of a tampered state.
func untrusted(t *statedir.TamperedError) eval.SessionState {
	var st eval.SessionState
	if t.Untrusted != nil {
		_ = json.Unmarshal(t.Untrusted, &st)
	}
	return st
}
