package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policy"
)

// docBlock is the yaml block after marker in docs/store.md.
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/store.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), marker+"\n```yaml\n")
	require.True(t, ok, "docs/store.md has no %s block", marker)
	src, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	return src
}

// TestDocExample runs the example of docs/store.md, its two policy files
// as written, on two replicas sharing a real Redis: 30 pushes at once by
// three agents in one repository, 20 allowed; another repository is not
// limited by them. Then Redis stops: a read still goes through (its
// counter is on_store_error: local, in a policy of its own) and a push
// blocks with store_unavailable; the two counters in one policy, as the
// page once had them, block the read too.
func TestDocExample(t *testing.T) {
	pushes, reads := docBlock(t, "<!-- store-example -->"), docBlock(t, "<!-- store-example-reads -->")
	set, err := compile.Compile([]policy.Source{{Name: "fleet-limits.yaml", Data: []byte(pushes)}, {Name: "read-limits.yaml", Data: []byte(reads)}})
	require.NoError(t, err)
	// The counter-example: the read counter and its rule in the push policy.
	_, counters, _ := strings.Cut(reads, "counters:\n")
	counters, rules, _ := strings.Cut(counters, "rules:\n")
	oneFile := strings.Replace(pushes, "rules:\n", counters+"rules:\n", 1) + rules
	together, err := compile.Compile([]policy.Source{{Name: "fleet-limits.yaml", Data: []byte(oneFile)}})
	require.NoError(t, err, oneFile)

	srv := redistest.Start(t)
	short := eval.WithStoreTimeout(500 * time.Millisecond)
	a, c := replica(t, set, openRedis(t, srv), short), replica(t, set, openRedis(t, srv), short)
	one := replica(t, together, openRedis(t, srv), short)
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

	// The outage.
	meta := map[string]any{"repository": "github.com/acme/api", "agent": "agent-9"}
	read := eval.Call{Tool: "Read", Args: map[string]any{"file_path": "README.md"}}
	split, joined := a.NewSession("doc-outage", meta), one.NewSession("doc-outage-1", meta)
	for _, s := range []*eval.Session{split, joined} {
		d, err := s.Before(context.Background(), read)
		require.NoError(t, err)
		require.Equal(t, policy.Allow, d.Verdict, "a read with Redis up")
	}
	srv.Stop()
	d, err = split.Before(context.Background(), read)
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "Redis down: the read's counter is local, in a policy of its own: %+v", d)
	d, err = split.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push"}})
	require.NoError(t, err)
	assert.Equal(t, eval.CodeStoreUnavailable, d.Code, "Redis down: a push needs the store")
	d, err = joined.Before(context.Background(), read)
	require.NoError(t, err)
	assert.Equal(t, eval.CodeStoreUnavailable, d.Code, "the two counters in one policy: the read needs the store too")
}
