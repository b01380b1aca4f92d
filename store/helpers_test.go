package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// mustSet compiles policies given as "name.yaml" -> rules-only YAML; the
// header (apiVersion, kind, name) is added from the file name.
func mustSet(t testing.TB, files map[string]string) *compile.PolicySet {
	t.Helper()
	var srcs []policy.Source
	for name, body := range files {
		hdr := fmt.Sprintf("apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\n", strings.TrimSuffix(name, ".yaml"))
		srcs = append(srcs, policy.Source{Name: name, Data: []byte(hdr + body)})
	}
	set, err := compile.Compile(srcs)
	require.NoError(t, err)
	return set
}

// capSet is a cap of n before-counted calls in the scope, with a halt on
// the tool Stop and an ask on the tool Deploy.
func capSet(t testing.TB, scope string, n int, extra string) *compile.PolicySet {
	return mustSet(t, map[string]string{"cap.yaml": fmt.Sprintf(`
counters:
  - name: calls
    phase: before
    scope: %s
    increment_when: 'tool == "Bash"'
%s
rules:
  - id: stop
    match: {tools: [Stop]}
    verdict: halt
    reason: stop everything
  - id: deploy
    match: {tools: [Deploy]}
    verdict: ask
  - id: cap
    match: {tools: [Bash]}
    condition: 'counters.calls >= %d'
    verdict: block
`, scope, extra, n)})
}

// replica is one engine on the store.
func replica(t testing.TB, set *compile.PolicySet, st state.Store, opts ...eval.Option) *eval.Engine {
	t.Helper()
	eng, err := eval.New(set, append([]eval.Option{eval.WithStore(st)}, opts...)...)
	require.NoError(t, err)
	return eng
}

// tally counts decisions by verdict and code.
type tally struct {
	mu    sync.Mutex
	byKey map[string]int
	allow atomic.Int64
}

func (tl *tally) add(d eval.Decision) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.byKey == nil {
		tl.byKey = map[string]int{}
	}
	tl.byKey[d.Verdict.String()+"/"+d.Code]++
	if d.Allowed() {
		tl.allow.Add(1)
	}
}

func (tl *tally) get(k string) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.byKey[k]
}

func (tl *tally) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return fmt.Sprint(tl.byKey)
}

// burst decides n Bash calls at once, call i on sessions[i%len], and tallies them.
func burst(t testing.TB, n int, sessions []*eval.Session) *tally {
	t.Helper()
	tl := &tally{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := sessions[i%len(sessions)].Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "true"}, ID: fmt.Sprint("c", i)})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			tl.add(d)
		}()
	}
	close(start)
	wg.Wait()
	return tl
}
