package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policy"
)

// TestDocExample runs the example of docs/store.md on two replicas sharing
// a real Redis: 30 pushes at once by three agents in one repository, 20
// allowed; another repository is not limited by them.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/store.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "<!-- store-example -->\n```yaml\n")
	require.True(t, ok, "docs/store.md has no store-example block")
	src, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	set, err := compile.Compile([]policy.Source{{Name: "fleet-limits.yaml", Data: []byte(src)}})
	require.NoError(t, err)

	srv := redistest.Start(t)
	a, c := replica(t, set, openRedis(t, srv)), replica(t, set, openRedis(t, srv))
	var sessions []*eval.Session
	for i := range 6 {
		meta := map[string]any{"repository": "github.com/acme/api", "agent": fmt.Sprint("agent-", i%3)}
		sessions = append(sessions, []*eval.Engine{a, c}[i%2].NewSession(fmt.Sprint("doc-", i), meta))
	}
	tl := &tally{}
	done := make(chan struct{})
	for i := range 30 {
		go func() {
			defer func() { done <- struct{}{} }()
			d, err := sessions[i%len(sessions)].Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push origin main"}})
			assert.NoError(t, err)
			tl.add(d)
		}()
	}
	for range 30 {
		<-done
	}
	t.Logf("docs/store.md example: 30 pushes over 2 replicas, 3 agents, one repository: %s", tl)
	assert.EqualValues(t, 20, tl.allow.Load())
	assert.Equal(t, 10, tl.get("block/"))
	d, err := c.NewSession("doc-other", map[string]any{"repository": "github.com/acme/web"}).Before(context.Background(),
		eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push"}})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "another repository")
	// The replica that committed last holds the count.
	n := 0
	for _, e := range []*eval.Engine{a, c} {
		if ks := e.SharedState(policy.ScopeRepository, "github.com/acme/api").Counters["fleet-limits/pushes"].Keys; len(ks) > 0 {
			n = max(n, len(ks[0].Events))
		}
	}
	assert.Equal(t, 20, n, "events in the repository's window")
}
