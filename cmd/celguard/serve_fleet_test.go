package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/celguard/celguard/internal/redistest"
)

// docExample reads the YAML block after marker in a docs page.
func docExample(t *testing.T, page, marker string) string {
	t.Helper()
	return docBlock(t, page, marker, "yaml")
}

// docBlock is the first ```lang block after marker in docs/page.
func docBlock(t *testing.T, page, marker, lang string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), marker)
	if !ok {
		t.Fatalf("docs/%s has no %s", page, marker)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	if !ok {
		t.Fatalf("docs/%s: no %s block after %s", page, lang, marker)
	}
	yaml, _, _ := strings.Cut(rest, "```")
	return yaml
}

// TestServeFleetExample runs docs/serve.md's fleet example: two `celguard
// serve` replicas on one real Redis, 200 calls at once split across them
// against a repository cap of 50: exactly 50 allowed; a fleet halt posted
// to one replica stops the sessions on both.
func TestServeFleetExample(t *testing.T) {
	rds := redistest.Start(t)
	pol := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(pol, []byte(docExample(t, "serve.md", "<!-- serve-fleet-example -->")), 0o644); err != nil {
		t.Fatal(err)
	}
	opFile := filepath.Join(t.TempDir(), "operator-token")
	if err := os.WriteFile(opFile, []byte("operator-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The replicas' flags are the page's, its paths and addresses ours.
	cmds := strings.ReplaceAll(docBlock(t, "serve.md", "<!-- serve-fleet-commands -->", "sh"), "\\\n", " ")
	var args []string
	halt := ""
	for _, line := range strings.Split(cmds, "\n") {
		if rest, ok := strings.CutPrefix(line, "celguard serve "); ok {
			args = strings.Fields(strings.NewReplacer("127.0.0.1:9743", "127.0.0.1:0", "redis://127.0.0.1:6379/0", rds.URL(),
				"/srv/app/fleet.yaml", pol, "/etc/celguard/operator-token", opFile).Replace(rest))
		}
		if strings.Contains(line, "/v1/halt") {
			halt = line
		}
	}
	if len(args) == 0 || !strings.Contains(halt, `-H "Authorization: Bearer $(cat /etc/celguard/operator-token)"`) {
		t.Fatalf("docs/serve.md's fleet commands: no celguard serve line, or a halt without the operator token:\n%s", cmds)
	}
	replicas := []*servedProcess{startServe(t, args...), startServe(t, args...)}

	post := func(url, body string, header ...string) (int, map[string]any) {
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	// 20 sessions of the repository, each started through one replica.
	for i := range 20 {
		if code, m := post(replicas[i%2].url+"/v1/sessions", fmt.Sprintf(`{"session_id": "agent-%d", "meta": {"repository": "acme/api"}}`, i)); code != 200 {
			t.Fatalf("session %d: %d %v", i, code, m)
		}
	}
	var allowed, blocked atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The session's other replica decides half of its calls.
			code, m := post(replicas[i%2].url+fmt.Sprintf("/v1/sessions/agent-%d/before", (i/2)%20), `{"tool": "Bash", "args": {"command": "git status"}}`)
			switch {
			case code == 200 && m["verdict"] == "allow":
				allowed.Add(1)
			case code == 200 && m["verdict"] == "block" && m["code"] == "repository_rate":
				blocked.Add(1)
			default:
				t.Errorf("call %d: %d %v", i, code, m)
			}
		}()
	}
	wg.Wait()
	t.Logf("200 calls over 2 celguard serve replicas sharing Redis, cap 50: %d allowed, %d blocked", allowed.Load(), blocked.Load())
	if allowed.Load() != 50 || blocked.Load() != 150 {
		t.Fatalf("%d allowed and %d blocked, want exactly 50 and 150", allowed.Load(), blocked.Load())
	}

	haltBody := `{"scope": "repository", "key": "acme/api", "reason": "incident"}`
	if code, m := post(replicas[0].url+"/v1/halt", haltBody); code != 401 {
		t.Fatalf("a halt without the operator token: %d %v, want 401", code, m)
	}
	if code, m := post(replicas[0].url+"/v1/halt", haltBody, "Authorization", "Bearer operator-secret"); code != 200 {
		t.Fatalf("halt: %d %v", code, m)
	}
	for r, rep := range replicas {
		if _, m := post(rep.url+"/v1/sessions/agent-3/before", `{"tool": "Read"}`); m["verdict"] != "halt" || m["code"] != "fleet_halted" {
			t.Errorf("replica %d after the fleet halt: %v, want halt fleet_halted", r, m)
		}
	}
	for _, rep := range replicas {
		rep.stop(t)
	}
}
