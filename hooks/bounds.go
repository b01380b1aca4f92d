package hooks

import "github.com/celguard/celguard/eval"

// MaxStateCounterKeys is how many keys each counter of a hook session keeps
// (eval.WithMaxCounterKeys), least recently touched dropped first. A hook
// reads and rewrites the session's state file at every event, so the file
// must stay small however long the turn: with the recommended bundle a turn
// of 100,000 calls, each with other arguments, keeps its state file under
// 64 KiB (TestStateBoundedPerTurn), where the in-process bound
// (eval.DefaultMaxCounterKeys, 4,096) let it reach 825 KB. A loop is the
// same call coming back soon: what the bound forgets is the count of a call
// not seen in the last 256 distinct ones.
const MaxStateCounterKeys = 256

// EngineOptions are the eval options a hook's engine needs on top of the
// caller's: the bounds of state kept in files (MaxStateCounterKeys).
func EngineOptions() []eval.Option {
	return []eval.Option{eval.WithMaxCounterKeys(MaxStateCounterKeys)}
}
