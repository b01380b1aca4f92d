package serve

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
)

// Bounds of what the console keeps of the decisions.
const (
	// ConsoleDecisions is how many recent decisions the console keeps (in
	// memory, masked as the decision log masks them).
	ConsoleDecisions = 5000
	// chartBucket is the width of a bar of the per-rule chart, and
	// chartBuckets how many bars it has.
	chartBucket  = time.Minute
	chartBuckets = 60
)

// consoleRecord is one decision the console keeps: the decision log's
// masked record, and the host it came through.
type consoleRecord struct {
	*decisionlog.Record
	Host string
}

// consoleFeed keeps the recent decisions and wakes the inbox's event
// streams when something changes.
type consoleFeed struct {
	mu   sync.Mutex
	ring []consoleRecord // oldest first, at most ConsoleDecisions
	// hosts are the hosts of decisions not yet in the ring (decide names
	// the host after the sink wrote the record).
	version uint64
	wake    chan struct{} // closed and replaced at every change
}

func newConsoleFeed() *consoleFeed { return &consoleFeed{wake: make(chan struct{})} }

// WriteDecision implements eval.DecisionSink: it keeps the masked record.
// It never fails, so it never refuses a decision.
func (f *consoleFeed) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	rec := decisionlog.NewRecord(ev)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ring) >= ConsoleDecisions {
		f.ring = slices.Delete(f.ring, 0, len(f.ring)-ConsoleDecisions+1)
	}
	f.ring = append(f.ring, consoleRecord{Record: rec})
	f.changedLocked()
	return nil
}

// noteHost names the host of decision id.
func (f *consoleFeed) noteHost(id, host string) {
	if id == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.ring) - 1; i >= 0 && i >= len(f.ring)-64; i-- {
		if f.ring[i].DecisionID == id {
			f.ring[i].Host = host
			return
		}
	}
}

// changed wakes the event streams.
func (f *consoleFeed) changed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changedLocked()
}

func (f *consoleFeed) changedLocked() {
	f.version++
	close(f.wake)
	f.wake = make(chan struct{})
}

// watch returns the version and a channel closed at the next change.
func (f *consoleFeed) watch() (uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.wake
}

// decisionFilter selects decisions.
type decisionFilter struct {
	Query   string // a substring of the tool, rule, reason, agent, session, host or arguments
	Verdict string
	Rule    string
	Session string
}

// find returns the decisions f selects, newest first, at most limit
// (every one when limit is 0), oldest first when asc.
func (f *consoleFeed) find(flt decisionFilter, limit int, asc bool) []consoleRecord {
	f.mu.Lock()
	ring := slices.Clone(f.ring)
	f.mu.Unlock()
	q := strings.ToLower(strings.TrimSpace(flt.Query))
	var out []consoleRecord
	for i := range ring {
		r := ring[len(ring)-1-i]
		if asc {
			r = ring[i]
		}
		if flt.Verdict != "" && string(r.Verdict) != flt.Verdict || flt.Rule != "" && r.RuleID != flt.Rule ||
			flt.Session != "" && r.SessionID != flt.Session {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(r.searchText()), q) {
			continue
		}
		out = append(out, r)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out
}

// searchText is what a query searches in a record.
func (r consoleRecord) searchText() string {
	parts := []string{r.Tool, r.RuleID, r.Policy, r.Reason, r.Code, r.SessionID, r.Host, r.Agent.Name, string(r.Verdict)}
	for k, v := range r.Agent.IDs {
		parts = append(parts, k, v)
	}
	parts = append(parts, formatArgs(r.Args))
	return strings.Join(parts, "\n")
}

// ruleSeries is one rule's counts over time, for the chart.
type ruleSeries struct {
	Rule   string
	Total  int
	Counts []int // chartBuckets of them, oldest first
}

// ruleCounts counts the decisions of each rule (of every rule that decided
// one) per chartBucket over the last chartBuckets, the busiest rules first,
// at most max of them.
func (f *consoleFeed) ruleCounts(now time.Time, max int) []ruleSeries {
	f.mu.Lock()
	ring := slices.Clone(f.ring)
	f.mu.Unlock()
	end := now.Truncate(chartBucket).Add(chartBucket)
	start := end.Add(-chartBuckets * chartBucket)
	by := map[string]*ruleSeries{}
	for _, r := range ring {
		if r.RuleID == "" || r.Time.Before(start) || !r.Time.Before(end) {
			continue
		}
		s := by[r.RuleID]
		if s == nil {
			s = &ruleSeries{Rule: r.RuleID, Counts: make([]int, chartBuckets)}
			by[r.RuleID] = s
		}
		s.Counts[int(r.Time.Sub(start)/chartBucket)]++
		s.Total++
	}
	out := make([]ruleSeries, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ruleSeries) int {
		if a.Total != b.Total {
			return b.Total - a.Total
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// forRequest returns the decision that made request id in session, if the
// console still keeps it: who asked, through which host.
func (f *consoleFeed) forRequest(session, id string) (consoleRecord, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.ring) - 1; i >= 0; i-- {
		r := f.ring[i]
		if r.SessionID == session && r.Approval != nil && r.Approval.Request == id {
			return r, true
		}
	}
	return consoleRecord{}, false
}
