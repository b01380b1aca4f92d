package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store"
)

func openRedis(t testing.TB, srv *redistest.Server) state.Store {
	t.Helper()
	st, err := store.Open(context.Background(), srv.URL())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// TestRedisOutage: Redis stopped in the middle of a load run on two
// replicas: every decision taken while it is down is a block with code
// store_unavailable, none is allowed; once Redis is back on its port,
// decisions are allowed again.
func TestRedisOutage(t *testing.T) {
	srv := redistest.Start(t)
	set := capSet(t, "repository", 1_000_000, "")
	a, c := replica(t, set, openRedis(t, srv)), replica(t, set, openRedis(t, srv))
	meta := map[string]any{"repository": "outage"}
	var sessions []*eval.Session
	for i := range 8 {
		sessions = append(sessions, []*eval.Engine{a, c}[i%2].NewSession(fmt.Sprint("o", i%4), meta))
	}
	// phase: 0 up, 1 going down, 2 down, 3 coming back, 4 up again (the
	// first decisions may still meet connections that died with the
	// server, one failure each), 5 up again for a while.
	var phase atomic.Int32
	var stop atomic.Bool
	tallies := [6]tally{}
	var mixed atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				p0 := phase.Load()
				d, err := sessions[(w+i)%len(sessions)].Before(context.Background(), eval.Call{Tool: "Bash"})
				if err != nil {
					t.Errorf("decision error: %v", err)
				}
				if p1 := phase.Load(); p1 == p0 {
					tallies[p0].add(d)
				} else {
					mixed.Add(1)
				}
			}
		}()
	}
	wait := func(p int32, n int) {
		for deadline := time.Now().Add(60 * time.Second); tallies[p].total() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("phase %d: only %d decisions", p, tallies[p].total())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait(0, 200)
	phase.Store(1)
	srv.Stop()
	phase.Store(2)
	wait(2, 200)
	phase.Store(3)
	srv.Restart()
	phase.Store(4)
	wait(4, 200)
	phase.Store(5)
	wait(5, 300)
	stop.Store(true)
	wg.Wait()
	t.Logf("before the outage: %s; while Redis was down: %s; just after it came back: %s; then: %s; %d decisions spanned a change",
		&tallies[0], &tallies[2], &tallies[4], &tallies[5], mixed.Load())
	assert.EqualValues(t, tallies[0].total(), tallies[0].allow.Load(), "before: all allowed")
	assert.Zero(t, tallies[2].allow.Load(), "none allowed while Redis is down")
	assert.Equal(t, tallies[2].total(), tallies[2].get("block/"+eval.CodeStoreUnavailable), "every decision blocked with store_unavailable")
	assert.Equal(t, tallies[4].total(), tallies[4].get("allow/")+tallies[4].get("block/"+eval.CodeStoreUnavailable), "just after: allowed, or a dead connection's store_unavailable")
	assert.EqualValues(t, tallies[5].total(), tallies[5].allow.Load(), "then: all allowed again")
}

func (tl *tally) total() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	n := 0
	for _, v := range tl.byKey {
		n += v
	}
	return n
}

// TestRedisOutageLocalCounter: a counter that opted into on_store_error:
// local keeps counting on the replica while Redis is down, and its limit
// still holds there; a counter that did not fails closed.
func TestRedisOutageLocalCounter(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	set := mustSet(t, map[string]string{"soft.yaml": `
counters:
  - name: soft
    phase: before
    scope: session
    on_store_error: local
    increment_when: 'tool == "Read"'
rules:
  - id: soft-cap
    match: {tools: [Read]}
    condition: 'counters.soft >= 5'
    verdict: block
`, "hard.yaml": `
counters:
  - name: hard
    phase: before
    scope: session
    increment_when: 'tool == "Bash"'
rules:
  - id: hard-cap
    match: {tools: [Bash]}
    condition: 'counters.hard >= 5'
    verdict: block
`})
	eng := replica(t, set, openRedis(t, srv), eval.WithStoreTimeout(500*time.Millisecond))
	s := eng.NewSession("soft", nil)
	for range 2 {
		d, err := s.Before(ctx, eval.Call{Tool: "Read"})
		require.NoError(t, err)
		require.True(t, d.Allowed())
	}
	srv.Stop()
	var read, bash tally
	for range 6 {
		d, err := s.Before(ctx, eval.Call{Tool: "Read"})
		require.NoError(t, err)
		read.add(d)
		d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
		bash.add(d)
	}
	t.Logf("Redis down: soft (local) counter: %s; hard counter: %s", &read, &bash)
	assert.EqualValues(t, 3, read.allow.Load(), "the soft limit of 5 holds locally: 2 counted before, 3 more")
	assert.Equal(t, 3, read.get("block/"))
	assert.Equal(t, 6, bash.get("block/"+eval.CodeStoreUnavailable))
}

// TestRedisOneRoundTrip: on a real server, a decision that reads and
// counts a repository counter is one command (one EVALSHA) once the
// handle holds the current state.
func TestRedisOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	set := capSet(t, "repository", 1000, "")
	eng := replica(t, set, openRedis(t, srv))
	s := eng.NewSession("rt", map[string]any{"repository": "rt"})
	_, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer cl.Close()
	// Commands sent by a client: the scripts' calls, not the commands
	// the scripts run (commandstats counts those too).
	processed := func() int {
		info, err := cl.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		n := 0
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			c, err := strconv.Atoi(calls)
			require.NoError(t, err)
			n += c
		}
		return n
	}
	before := processed()
	for range 20 {
		d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
		require.Equal(t, policy.Allow, d.Verdict)
	}
	n := processed() - before
	t.Logf("20 decisions with a repository counter: %d scripts run", n)
	assert.Equal(t, 20, n, "one script (one round trip) per decision")
}

// TestNewRedisOnCallersClient: a store made on a caller's client shares
// entries with one opened from a URL (same key layout, prefix and all),
// takes the caller's prefix, and leaves the client open when it closes.
func TestNewRedisOnCallersClient(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer cl.Close()
	set := capSet(t, "repository", 3, "")
	mine := store.NewRedis(cl, store.RedisOptions{})
	a, b := replica(t, set, mine), replica(t, set, openRedis(t, srv))
	meta := map[string]any{"repository": "shared"}
	for i := range 3 {
		d, err := []*eval.Engine{a, b}[i%2].NewSession(fmt.Sprint("c", i), meta).Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
		require.Equal(t, policy.Allow, d.Verdict, "call %d", i)
	}
	d, err := a.NewSession("c3", meta).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, "cap", d.RuleID, "the two stores count in one entry")
	n, err := cl.Exists(ctx, "celguard:{repository:shared}").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the default prefix")

	other := replica(t, set, store.NewRedis(cl, store.RedisOptions{Prefix: "tenant-b", TTL: time.Minute}))
	d, err = other.NewSession("c4", meta).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "another prefix is another set of entries")
	ttl, err := cl.PTTL(ctx, "tenant-b:{repository:shared}").Result()
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= time.Minute, "the caller's ttl, got %s", ttl)

	require.NoError(t, mine.Close())
	require.NoError(t, cl.Ping(ctx).Err(), "the caller's client stays open")
}
