package eval

import "github.com/celguard/celguard/compile"

// counterTotal is what counter c reads at turn end (EndTurn): the sum of
// its counts over every key, as each would read now (a window counter's
// events in its window), capped at CounterCeiling; the ceiling while any
// of its keys is saturated.
func (s *Session) counterTotal(c *compile.Counter) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.counterFor(c)
	now := s.eng.cfg.now()
	if s.sat != nil && s.saturated(c, "", now) {
		return CounterCeiling
	}
	var total int64
	for key := range cs.keys {
		total = min(total+cs.value(key, c.Decl.Window, now), CounterCeiling)
	}
	return total
}
