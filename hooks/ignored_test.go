package hooks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks/daemonwire"
)

// TestIgnoredTableIsGenerated: the lean hook client's table of ignored
// events (daemonwire, generated) is the host table's, with this
// package's answers; and no event a host registers for is listed as
// ignored.
func TestIgnoredTableIsGenerated(t *testing.T) {
	want, err := IgnoredTable()
	require.NoError(t, err)
	require.Equal(t, want, daemonwire.IgnoredHosts(), "the generated table is stale: run `go generate ./hooks/daemonwire`")
	for _, info := range HostTable() {
		for _, e := range info.Ignored {
			assert.NotContains(t, info.Events, e, "%s registers for %s, which it lists as ignored", info.Name, e)
		}
	}
}

// ignoredSeeds are events on the edge of what IgnoredAnswer takes.
var ignoredSeeds = []string{
	`{"hook_event_name":"Notification","session_id":"s","message":"m"}`,
	`{"hook_event_name":"Notification"}`,
	`{"hook_event_name":"PreCompress","session_id":null,"cwd":"/x"}`,
	`{"hook_event_name":"afterFileEdit","conversation_id":"c","file_path":"/a","edits":[]}`,
	`{"hook_event_name":"Notification","session_id":5}`,
	`{"hook_event_name":"Notification","cwd":{}}`,
	`{"hook_event_name":"Notification","tool_name":["Bash"]}`,
	`{"hook_event_name":"Notification","conversation_id":true}`,
	`{"hook_event_name":"Notification","tool_input":"{\"a\":1}","tool_result":3}`,
	`{"hook_event_name":"Notification","hook_event_name":"PreToolUse","tool_name":"Bash"}`,
	`{"hook_event_name":"PreToolUse","hook_event_name":"Notification"}`,
	`{"hook_event_name":"Notif\xffication"}`,
	`{"hook_event_name":""}`,
	`{"hook_event_name":"FutureEvent","session_id":"s"}`,
	`{"hook_event_name":"Notification"} {}`,
	`[{"hook_event_name":"Notification"}]`,
	`  {"hook_event_name":"Notification"}  `,
	`{"hook_event_name":"Notification","n":1e400}`,
	`{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}`,
	`null`,
	``,
}

// FuzzIgnoredAnswer: whenever the lean client's IgnoredAnswer answers an
// event itself, the hook's Runner (what `celguard hook` runs) decodes it
// as an event to ignore and answers exactly the same bytes, stderr and
// exit code, on every host. Seeds: the golden events of every host and
// the edge cases above.
func FuzzIgnoredAnswer(f *testing.F) {
	for _, s := range ignoredSeeds {
		f.Add(s)
	}
	for _, host := range Hosts() {
		files, err := filepath.Glob(filepath.Join("testdata", host, "*.json"))
		require.NoError(f, err)
		for _, in := range files {
			data, err := os.ReadFile(in)
			require.NoError(f, err)
			f.Add(string(data))
		}
	}
	f.Fuzz(func(t *testing.T, event string) {
		for _, host := range Hosts() {
			a, ok := daemonwire.IgnoredAnswer(host, []byte(event))
			if !ok {
				continue
			}
			h, err := New(host, Options{})
			require.NoError(t, err)
			ev, err := h.Decode([]byte(event))
			require.NoError(t, err, "%s: answered locally, but the hook fails to decode %q", host, event)
			require.Equal(t, KindIgnore, ev.Kind, "%s: answered locally, but the hook decides %q", host, event)
			r := &Runner{Host: h} // no engine, no store: an ignored event needs neither
			resp := r.Run(context.Background(), []byte(event))
			assert.Equal(t, string(resp.Stdout), a.Stdout, "%s: stdout of %q", host, event)
			assert.Equal(t, resp.Stderr, a.Stderr, "%s: stderr of %q", host, event)
			assert.Equal(t, resp.Exit, a.Exit, "%s: exit code of %q", host, event)
		}
	})
}

// TestIgnoredAnswerFallsBack: what the lean client leaves to whoever can
// decide: a host the table does not know, an event it does not list (even
// one celguard ignores), a field of the wrong type, input that is not one
// JSON object.
func TestIgnoredAnswerFallsBack(t *testing.T) {
	for _, c := range []struct{ host, event string }{
		{"vim", `{"hook_event_name":"Notification"}`},
		{"codex", `{"hook_event_name":"Notification"}`},
		{"claude-code", `{"hook_event_name":"FutureEvent"}`},
		{"claude-code", `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`},
		{"claude-code", `{"hook_event_name":"Notification","session_id":5}`},
		{"cursor", `{"hook_event_name":"afterFileEdit","conversation_id":1}`},
		{"claude-code", `{"hook_event_name":"Notification"}x`},
		{"claude-code", `["Notification"]`},
		{"gemini", `{"hook_event_name":"notification"}`},
	} {
		_, ok := daemonwire.IgnoredAnswer(c.host, []byte(c.event))
		assert.False(t, ok, "%s %s", c.host, c.event)
	}
	a, ok := daemonwire.IgnoredAnswer("gemini", []byte(`{"hook_event_name":"PreCompress","session_id":"s"}`))
	require.True(t, ok)
	assert.Equal(t, daemonwire.CommandAnswer{Stdout: "{}\n"}, a)
}
