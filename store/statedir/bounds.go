package statedir

import (
	"encoding/json"
	"fmt"
)

// MaxStateCounterKeys is how many keys of each counter a session's state
// file keeps, the most recently touched (Locked.Save drops the others).
// A hook reads and rewrites the file at every event, so it must stay small
// however long the turn: with the recommended bundle a turn of 100,000
// calls, each with other arguments, keeps it under 64 KiB
// (TestStateBoundedPerTurn in package hooks), where the in-process bound
// (eval.DefaultMaxCounterKeys, 4,096) let it reach 825 KB. A loop is the
// same call coming back soon: what the bound forgets is the count of a call
// not seen in the last 256 distinct ones.
const MaxStateCounterKeys = 256

// normalize makes state, a session's state as JSON, the state of the
// session (or entry) id, keeping of each counter the maxKeys keys touched
// most recently (eval.SessionState lists them most recent first). A state
// that already is passes unchanged, bytes and all; this is the one place
// the directory reads the state's schema: "id", and "counters" with their
// "keys".
func normalize(state []byte, id string, maxKeys int) ([]byte, error) {
	var head struct {
		ID       string `json:"id"`
		Counters map[string]struct {
			Keys []struct{} `json:"keys"`
		} `json:"counters"`
	}
	if err := json.Unmarshal(state, &head); err != nil {
		return nil, fmt.Errorf("the state is not a JSON object: %w", err)
	}
	over := false
	for _, c := range head.Counters {
		over = over || len(c.Keys) > maxKeys
	}
	if head.ID == id && !over {
		return state, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(state, &m); err != nil {
		return nil, err
	}
	var err error
	if m["id"], err = json.Marshal(id); err != nil {
		return nil, err
	}
	if over {
		var counters map[string]map[string]json.RawMessage
		if err := json.Unmarshal(m["counters"], &counters); err != nil {
			return nil, err
		}
		for _, c := range counters {
			var keys []json.RawMessage
			if err := json.Unmarshal(c["keys"], &keys); err != nil {
				return nil, err
			}
			if len(keys) > maxKeys {
				if c["keys"], err = json.Marshal(keys[:maxKeys]); err != nil {
					return nil, err
				}
			}
		}
		if m["counters"], err = json.Marshal(counters); err != nil {
			return nil, err
		}
	}
	return json.Marshal(m)
}
