package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/celguard/celguard/internal/redistest"
)

// fleetPolicy caps Bash calls at 50 per repository (before-counted), halts
// on the tool Stop, and asks for Deploy.
const fleetPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: fleet
counters:
  - name: calls
    phase: before
    scope: repository
    increment_when: 'tool == "Bash"'
rules:
  - id: stop
    match: {tools: [Stop]}
    verdict: halt
    reason: stop everything
  - id: cap
    match: {tools: [Bash]}
    condition: 'counters.calls >= 50'
    verdict: block
    reason: at most 50 calls per repository
`

// post sends a JSON body and decodes the answer into out (when not nil),
// returning the status.
func post(t *testing.T, url string, body any, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return 0
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil && json.Unmarshal(data, out) != nil {
		t.Errorf("POST %s: %d %s: not JSON", url, res.StatusCode, data)
	}
	return res.StatusCode
}

type verdict struct {
	Verdict string `json:"verdict"`
	Code    string `json:"code"`
}

// TestServeReplicasShareRedis runs two real `celguard serve` processes on
// one real Redis: 200 before-calls at once, split between them, against a
// cap of 50 let exactly 50 through; a replica restarted in the middle loses
// no count; a halt through one replica stops the session on the other;
// with Redis stopped every decision is a block with store_unavailable, and
// decisions come back with it.
func TestServeReplicasShareRedis(t *testing.T) {
	rs := redistest.Start(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(pol, []byte(fleetPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--listen", "127.0.0.1:0", "--policy", pol, "--store", rs.URL(), "--reload-interval", "0"}
	a, b := startServe(t, args...), startServe(t, args...)
	replicas := []*servedProcess{a, b}
	open := func(p *servedProcess, id, repo string) {
		var ans struct {
			SessionID string `json:"session_id"`
		}
		if st := post(t, p.url+"/v1/sessions", map[string]any{"session_id": id, "meta": map[string]any{"repository": repo}}, &ans); st != 200 || ans.SessionID != id {
			t.Fatalf("POST /v1/sessions on %s: %d %+v", p.url, st, ans)
		}
	}
	before := func(p *servedProcess, id, tool string) verdict {
		var v verdict
		if st := post(t, p.url+"/v1/sessions/"+id+"/before", map[string]any{"tool": tool, "args": map[string]any{"command": "ls"}}, &v); st != 200 {
			t.Errorf("before on %s: HTTP %d", p.url, st)
		}
		return v
	}

	// 200 calls at once over 10 sessions of one repository, each session
	// open on both replicas.
	for i := range 10 {
		for _, p := range replicas {
			open(p, fmt.Sprint("cap-", i), "github.com/acme/api")
		}
	}
	counts := map[verdict]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := before(replicas[i%2], fmt.Sprint("cap-", i%10), "Bash")
			mu.Lock()
			counts[v]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("two celguard serve replicas on one Redis, 200 before-calls at once against a cap of 50: %v", counts)
	if counts[verdict{"allow", ""}] != 50 || counts[verdict{"block", ""}] != 150 {
		t.Errorf("want exactly 50 allowed and 150 blocked by the cap, got %v", counts)
	}

	// A replica restarted mid-run: a fresh repository, 30 calls, replica A
	// replaced, 40 more: 50 allowed in all.
	allowed := 0
	run := func(n int) {
		for i := range n {
			p := replicas[i%2]
			id := fmt.Sprint("restart-", i%3)
			open(p, id, "github.com/acme/web")
			if v := before(p, id, "Bash"); v.Verdict == "allow" {
				allowed++
			}
		}
	}
	run(30)
	a.stop(t)
	a = startServe(t, args...)
	replicas[0] = a
	run(40)
	t.Logf("70 calls, replica A restarted after 30, cap 50: %d allowed", allowed)
	if allowed != 50 {
		t.Errorf("replica restarted: %d allowed, want 50", allowed)
	}

	// A halt through A stops the session on B.
	open(a, "halt", "github.com/acme/halt")
	open(b, "halt", "github.com/acme/halt")
	if v := before(a, "halt", "Stop"); v.Verdict != "halt" {
		t.Fatalf("Stop on A: %+v", v)
	}
	if v := before(b, "halt", "Bash"); v.Verdict != "halt" || v.Code != "turn_halted" {
		t.Errorf("after a halt through A, B decided %+v, want a halt with turn_halted", v)
	}

	// Redis stopped: every decision blocks with store_unavailable; back on
	// its port, decisions recover.
	open(a, "outage", "github.com/acme/outage")
	open(b, "outage", "github.com/acme/outage")
	rs.Stop()
	down := map[verdict]int{}
	for i := range 20 {
		down[before(replicas[i%2], "outage", "Bash")]++
	}
	t.Logf("Redis stopped: %v", down)
	if down[verdict{"block", "store_unavailable"}] != 20 {
		t.Errorf("with Redis down, want 20 blocks with store_unavailable, got %v", down)
	}
	rs.Restart()
	up := map[verdict]int{}
	for i := 0; i < 200 && up[verdict{"allow", ""}] < 10; i++ {
		up[before(replicas[i%2], "outage", "Bash")]++
	}
	t.Logf("Redis back: %v", up)
	if up[verdict{"allow", ""}] < 10 {
		t.Errorf("with Redis back, decisions did not recover: %v", up)
	}
}
