package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/serve"
)

// TestDeadlineWhileDecisionHangs: a decision that ignores its context and
// has not returned at the request's deadline is answered at the deadline,
// with the deadline's block, whole (Content-Length) and with Connection:
// close, while it still runs; when it returns later, with an allow, that
// allow is never written: the connection carries exactly one answer and
// then ends, and the session API counts no allow. On the session API, the hook endpoint and its command form.
func TestDeadlineWhileDecisionHangs(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	hanging := eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
		entered <- struct{}{}
		<-release // ignores its context: a judge or an approver that hangs
		return eval.Approval{Answer: eval.Approve}, nil
	})
	f := newFixture(t, func(cfg *serve.Config) {
		cfg.Engine.Approver = hanging
		cfg.Timeout = 50 * time.Millisecond
		withOperator(cfg)
	})
	f.setPolicy(askPolicy)
	if _, err := f.srv.Reload(false); err != nil {
		t.Fatal(err)
	}
	hook, _ := json.Marshal(preToolUseTool("x", "Deploy"))
	cases := []struct {
		name, path, body string
		check            func(body []byte) bool
	}{
		{"session API", "/v1/sessions/x/before", `{"tool":"Deploy"}`, func(b []byte) bool {
			var m map[string]any
			return json.Unmarshal(b, &m) == nil && m["verdict"] == "block" && m["code"] == serve.CodeDeadlineExceeded
		}},
		{"hook", "/v1/hooks/claude-code", string(hook), func(b []byte) bool {
			return strings.Contains(string(b), `"permissionDecision":"deny"`) && strings.Contains(string(b), "deadline")
		}},
		{"hook, command form", "/v1/hooks/claude-code?form=command", string(hook), func(b []byte) bool {
			var ca serve.CommandAnswer
			return json.Unmarshal(b, &ca) == nil && ca.Exit == 2 && strings.Contains(ca.Stderr, "deadline")
		}},
	}
	addr := strings.TrimPrefix(f.url, "http://")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against a hang, not a measurement
			req, _ := http.NewRequest("POST", "http://"+addr+c.path, strings.NewReader(c.body))
			if err := req.Write(conn); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body) // whole by its length, while the decision still hangs
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-entered:
			default:
				t.Fatal("answered before the decision reached its approver")
			}
			if resp.StatusCode != 200 || !resp.Close || resp.ContentLength != int64(len(body)) || !c.check(body) {
				t.Fatalf("HTTP %d, close %v, length %d: %s; want 200, the deadline's answer, Connection: close and its length", resp.StatusCode, resp.Close, resp.ContentLength, body)
			}
			release <- struct{}{} // the decision returns, an allow
			rest, err := io.ReadAll(br)
			if err != nil || len(rest) != 0 {
				t.Fatalf("after the deadline's answer the connection carried %q (%v), want nothing and its end", rest, err)
			}
		})
	}
	// The session API's decisions counted are the deadline's blocks,
	// never the allow its decision returned after the deadline.
	m := f.op("GET", "/metrics", nil)
	for _, line := range strings.Split(string(m.body), "\n") {
		if strings.HasPrefix(line, "celguard_decisions_total{") && strings.Contains(line, `host="api"`) && strings.Contains(line, `verdict="allow"`) {
			t.Errorf("a late decision was counted: %s", line)
		}
	}
	if !strings.Contains(string(m.body), `verdict="block"`) {
		t.Errorf("no block counted:\n%s", m.body)
	}
}
