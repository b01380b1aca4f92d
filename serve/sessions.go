package serve

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/eval"
)

// errFull is the error of a session table at its bound.
var errFull = errors.New("the server keeps as many sessions as it may (--max-sessions); end some, or wait for idle ones to expire")

// sessionTable keeps the sessions by id: at most max of them, each
// forgotten once unused for idle.
type sessionTable struct {
	mu   sync.Mutex
	max  int
	idle time.Duration
	m    map[string]*session
}

// session is one session of the table.
type session struct {
	*eval.Session
	// agent is the agent the session was started for: the agent of a
	// call that names none.
	agent eval.Agent
	// meta is the metadata the session was started with (the session
	// API's), for its handles on other projects' engines.
	meta map[string]any
	// last is when the session was last used (guarded by the table's mu).
	last time.Time

	// others are the session's handles on the engines of the other
	// projects its hook events came from (celguard.Guard.ForWorkDir), by
	// engine. They share the session's state through the engines' store.
	mu     sync.Mutex
	others map[*eval.Engine]*eval.Session
}

// maxOtherHandles bounds a session's handles on other projects' engines;
// past it they are dropped (and made again, from the store, when needed).
const maxOtherHandles = 16

// on is the session's handle on eng, made with meta when there is none
// (created says so); the session itself when eng is the server's own
// engine (primary).
func (s *session) on(eng, primary *eval.Engine, meta map[string]any) (h *eval.Session, created bool) {
	if eng == nil || eng == primary {
		return s.Session, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.others[eng]; ok {
		return h, false
	}
	if s.others == nil || len(s.others) >= maxOtherHandles {
		s.others = map[*eval.Engine]*eval.Session{}
	}
	h = eng.NewSession(s.ID(), meta)
	s.others[eng] = h
	return h, true
}

// agentOr is a, or the session's agent when a names none.
func (s *session) agentOr(a eval.Agent) eval.Agent {
	if a.IsZero() {
		return s.agent
	}
	return a
}

func newSessionTable(max int, idle time.Duration) *sessionTable {
	return &sessionTable{max: max, idle: idle, m: map[string]*session{}}
}

// get returns the session id, made by create when there is none (created
// says so). A table at its bound forgets its idle sessions first, and
// fails with errFull when none is.
func (t *sessionTable) get(id string, now time.Time, create func() *session) (s *session, created bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[id]; ok && now.Sub(s.last) < t.idle {
		s.last = now
		return s, false, nil
	}
	delete(t.m, id) // an idle one is forgotten: a new session starts
	if len(t.m) >= t.max {
		t.sweepLocked(now)
		if len(t.m) >= t.max {
			return nil, false, errFull
		}
	}
	s = create()
	s.last = now
	t.m[id] = s
	return s, true, nil
}

// lookup returns the session id if the table holds it (and it is not
// idle), without making one or counting it as used.
func (t *sessionTable) lookup(id string) (*session, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[id]
	return s, ok
}

// remove forgets the session id; ok says whether there was one.
func (t *sessionTable) remove(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[id]
	delete(t.m, id)
	return ok
}

// sweep forgets the sessions idle at now.
func (t *sessionTable) sweep(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sweepLocked(now)
}

func (t *sessionTable) sweepLocked(now time.Time) int {
	n := 0
	for id, s := range t.m {
		if now.Sub(s.last) >= t.idle {
			delete(t.m, id)
			n++
		}
	}
	return n
}

// len is the number of sessions kept.
func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// all returns the sessions kept, sorted by id.
func (t *sessionTable) all() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *session) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}

// sessionSeen is a session with when it was last used.
type sessionSeen struct {
	*session
	last time.Time
}

// recent returns at most n sessions, the most recently used first.
func (t *sessionTable) recent(n int) []sessionSeen {
	t.mu.Lock()
	out := make([]sessionSeen, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, sessionSeen{s, s.last})
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b sessionSeen) int {
		if c := b.last.Compare(a.last); c != 0 {
			return c
		}
		return strings.Compare(a.ID(), b.ID())
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
