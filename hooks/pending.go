package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// An after-event whose session lock cannot be taken in time comes after the
// tool ran: dropping it would lose its counts. It is written instead as a
// pending file of the state directory (statedir.Dir.RecordPending), and
// the next event that holds the session replays it (After on the resumed
// session, committed as any decision) before deciding, and removes it. The hook still answers the
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

// replay applies the session's pending after-events to sess, oldest
// first, each removed once its counts are committed (store.Held.Applied).
// A pending file that fails its check is not applied; bad says so, and it
// is removed once the event is answered (store.Held.Release).
func replay(ctx context.Context, held *store.Held, sess *eval.Session) (bad error, err error) {
	events, bad, err := held.Pending()
	if err != nil {
		return nil, err
	}
	for _, pe := range events {
		var p pendingEvent
		if err := json.Unmarshal(pe.Event, &p); err != nil {
			bad = errors.Join(bad, fmt.Errorf("the pending after-event %s is signed but not valid: %w", pe.File, err))
			if err := held.Applied(pe); err != nil {
				return bad, err
			}
			continue
		}
		if _, err := sess.After(ctx, p.Call, p.Result); err != nil {
			return bad, fmt.Errorf("the pending after-event of %s could not be applied: %w", p.Call.Tool, err)
		}
		if err := held.Applied(pe); err != nil {
			return bad, err
		}
	}
	return bad, nil
}
