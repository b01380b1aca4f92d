package hooks

import "github.com/celguard/celguard/eval"

// MaxStateCounterKeys is how many keys of each counter a session's state
// file keeps, the most recently touched (LockedState.Save drops the others).
// A hook reads and rewrites the file at every event, so it must stay small
// however long the turn: with the recommended bundle a turn of 100,000
// calls, each with other arguments, keeps it under 64 KiB
// (TestStateBoundedPerTurn), where the in-process bound
// (eval.DefaultMaxCounterKeys, 4,096) let it reach 825 KB. A loop is the
// same call coming back soon: what the bound forgets is the count of a call
// not seen in the last 256 distinct ones.
const MaxStateCounterKeys = 256

// boundState keeps, of each counter of st, the MaxStateCounterKeys keys
// touched most recently (eval.SessionState lists them most recent first).
// The caller's state is left as it is.
func boundState(st eval.SessionState) eval.SessionState {
	bounded := make(map[string]eval.CounterState, len(st.Counters))
	for id, c := range st.Counters {
		if len(c.Keys) > MaxStateCounterKeys {
			c.Keys = c.Keys[:MaxStateCounterKeys]
		}
		bounded[id] = c
	}
	if st.Counters != nil {
		st.Counters = bounded
	}
	return st
}
