package eval

import (
	"fmt"
	"sync"
	"testing"
)

// TestSessionLocks: a session's lock admits one holder at a time over many
// goroutines and ids; once nobody holds or waits for a lock it leaves the
// map, and the unused locks kept for reuse stay bounded.
func TestSessionLocks(t *testing.T) {
	var l sessionLocks
	inside := map[string]int{}
	var mu sync.Mutex // guards inside, for the check itself
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 300 {
				id := fmt.Sprint("s", (g+i)%5)
				sl := l.lock(id)
				mu.Lock()
				inside[id]++
				if inside[id] != 1 {
					t.Errorf("%d holders of the lock of %s", inside[id], id)
				}
				mu.Unlock()
				mu.Lock()
				inside[id]--
				mu.Unlock()
				l.unlock(id, sl)
			}
		})
	}
	// Many ids at once: more locks than are kept for reuse.
	var held []*sessionLock
	for i := range 2 * maxFreeSessionLocks {
		held = append(held, l.lock(fmt.Sprint("many", i)))
	}
	for i, sl := range held {
		l.unlock(fmt.Sprint("many", i), sl)
	}
	wg.Wait()
	if len(l.m) != 0 {
		t.Errorf("%d locks left in the map with nobody holding them", len(l.m))
	}
	if len(l.free) > maxFreeSessionLocks {
		t.Errorf("%d unused locks kept, more than %d", len(l.free), maxFreeSessionLocks)
	}
	if n := testing.AllocsPerRun(100, func() { l.unlock("x", l.lock("x")) }); n != 0 {
		t.Errorf("taking and giving back a lock allocates %.0f times", n)
	}
}
