package eval

import (
	"container/list"
	"time"
)

// counterState holds one counter's counts in one session, per key. The
// number of keys is bounded: past the bound, the key touched least recently
// is forgotten (LRU). A loop is the same key coming back, so the key being
// counted is always among the most recent; what is lost is the count of a
// key not seen for the longest time.
type counterState struct {
	keys  map[string]*list.Element
	order *list.List // front: most recently touched
	// turn is the turn the turn-scoped counts belong to.
	turn uint64
}

type keyState struct {
	key    string
	count  int64
	events []time.Time // window counters: event times, oldest first
	last   string      // streak counters: the last streak value
}

func newCounterState() *counterState {
	return &counterState{keys: map[string]*list.Element{}, order: list.New()}
}

func (c *counterState) clear() {
	clear(c.keys)
	c.order.Init()
}

// value is the count for key: every event, or only those in the window
// ending at now.
func (c *counterState) value(key string, window time.Duration, now time.Time) int64 {
	el, ok := c.keys[key]
	if !ok {
		return 0
	}
	ks := el.Value.(*keyState)
	if window <= 0 {
		return ks.count
	}
	cut := now.Add(-window)
	n := 0
	for i := len(ks.events) - 1; i >= 0 && ks.events[i].After(cut); i-- {
		n++
	}
	return int64(n)
}

// pruneOldest drops the expired events of the least recently touched key
// (other than skip), and the key itself once none is left. One key per
// increment keeps a window counter's memory proportional to its recent
// events, not to every key it ever saw.
func (c *counterState) pruneOldest(skip *list.Element, window time.Duration, now time.Time) {
	el := c.order.Back()
	if el == nil || el == skip {
		return
	}
	ks := el.Value.(*keyState)
	cut := now.Add(-window)
	i := 0
	for i < len(ks.events) && !ks.events[i].After(cut) {
		i++
	}
	ks.events = ks.events[i:]
	if len(ks.events) == 0 {
		c.order.Remove(el)
		delete(c.keys, ks.key)
	}
}

func (c *counterState) reset(key string) {
	if el, ok := c.keys[key]; ok {
		c.order.Remove(el)
		delete(c.keys, key)
	}
}

// increment counts one event for key, of weight by (weight; 1
// otherwise), the count saturating at CounterCeiling. With a streak value
// (streak != nil), an event whose value differs from the key's last one
// restarts the count.
func (c *counterState) increment(key string, window time.Duration, now time.Time, maxKeys, maxEvents int, streak *string, by int64) {
	el, ok := c.keys[key]
	if ok {
		c.order.MoveToFront(el)
	} else {
		for len(c.keys) >= maxKeys {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.keys, oldest.Value.(*keyState).key)
		}
		el = c.order.PushFront(&keyState{key: key})
		c.keys[key] = el
	}
	ks := el.Value.(*keyState)
	if window > 0 {
		c.pruneOldest(el, window, now)
	}
	if by > CounterCeiling-ks.count {
		ks.count = CounterCeiling
	} else {
		ks.count += by
	}
	if streak != nil {
		if ks.count > 1 && ks.last != *streak {
			ks.count = 1
		}
		ks.last = *streak
	}
	if window > 0 {
		// Drop events that left the window, then bound what is left.
		cut := now.Add(-window)
		i := 0
		for i < len(ks.events) && !ks.events[i].After(cut) {
			i++
		}
		ks.events = append(ks.events[i:], now)
		if len(ks.events) > maxEvents {
			ks.events = ks.events[len(ks.events)-maxEvents:]
		}
	}
}
