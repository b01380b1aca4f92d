package eval

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/celguard/celguard/policy"
)

// TestRecentValuesMadeWhenRead holds session.recent's lazily made values
// to the list made afresh from the recorded calls, whatever mix of calls
// before and after they ran, status changes, drops past MaxRecent, restores
// and reads came first.
func TestRecentValuesMadeWhenRead(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 6))
	var f sessionFacts
	verdicts := []policy.Verdict{policy.Allow, policy.Ask, policy.Block, policy.Warn}
	for step := range 2000 {
		call := Call{Tool: []string{"Bash", "Read"}[r.IntN(2)], Args: map[string]any{"command": fmt.Sprint("c", r.IntN(6))}}
		if r.IntN(3) == 0 {
			call.ID = fmt.Sprint("id", r.IntN(20))
		}
		switch r.IntN(10) {
		case 0:
			f.restoreRecent(append([]RecentCall(nil), f.recent...), f.seq)
		case 1, 2, 3:
			f.noteRecent(policy.PhaseAfter, call, &Result{IsError: r.IntN(2) == 0}, Decision{}, 1)
		default:
			f.noteRecent(policy.PhaseBefore, call, nil, Decision{Verdict: verdicts[r.IntN(len(verdicts))]}, 1)
		}
		if r.IntN(3) != 0 {
			continue // not read after every step: values stay unmade
		}
		want := make([]any, len(f.recent))
		for i, rc := range f.recent {
			want[i] = rc.value()
		}
		if got := f.recentValue(); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: session.recent is\n%v\nmade afresh it is\n%v", step, got, want)
		}
	}
}
