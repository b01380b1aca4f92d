package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// afterModel is a Gemini AfterModel event of session id carrying text as
// its chunk, with finishReason STOP when last.
func afterModel(t *testing.T, id, text string, last bool) []byte {
	t.Helper()
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{text}}, "index": 0}
	if last {
		cand["finishReason"] = "STOP"
	}
	ev := map[string]any{
		"session_id": id, "cwd": "/home/user/project", "hook_event_name": "AfterModel",
		"llm_request":  map[string]any{"model": "gemini-2.5-pro", "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		"llm_response": map[string]any{"text": text, "candidates": []any{cand}},
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// shown is what Gemini CLI shows for a chunk given the hook's answer: the
// replaced response's text, else the chunk's own; blocked when denied.
func shown(t *testing.T, chunk string, r Response) (text string, blocked bool) {
	t.Helper()
	require.Equal(t, 0, r.Exit, r.Stderr)
	var out geminiOut
	require.NoError(t, json.Unmarshal(r.Stdout, &out), string(r.Stdout))
	if out.Decision == "deny" {
		return "", true
	}
	if out.HookSpecificOutput != nil && out.HookSpecificOutput.LLMResponse != nil {
		resp := out.HookSpecificOutput.LLMResponse
		parts := resp["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
		require.NotEmpty(t, parts, "Gemini CLI ignores a replacement without parts")
		return resp["text"].(string), false
	}
	return chunk, false
}

// stream sends chunks as one answer and returns what the user saw, and
// whether the answer was blocked.
func stream(t *testing.T, r *Runner, id string, chunks []string) (string, bool) {
	t.Helper()
	var b strings.Builder
	for i, c := range chunks {
		text, blocked := shown(t, c, r.Run(context.Background(), afterModel(t, id, c, i == len(chunks)-1)))
		if blocked {
			return b.String(), true
		}
		b.WriteString(text)
	}
	return b.String(), false
}

func TestGeminiStreamAcrossChunks(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	filler := strings.Repeat("All is well here. ", 600) // 10,800 bytes
	cases := []struct {
		name    string
		chunks  []string
		want    string // what the user sees, in full
		blocked bool
	}{
		{
			name:   "a secret split across three chunks is redacted, never released",
			chunks: []string{"The key is AK", "IAIOSFOD", "NN7EXAMPLE. Done."},
			want:   "The key is [REDACTED:aws_access_key]. Done.",
		},
		{
			name:   "a secret split far into a long answer",
			chunks: []string{filler, "and the key is AKIAIOSF", "ODNN7EXAMPLE", " " + filler, "end"},
			want:   filler + "and the key is [REDACTED:aws_access_key] " + filler + "end",
		},
		{
			name:    "a blocked word split across chunks blocks the answer",
			chunks:  []string{filler, "FORB", "IDDEN", "more"},
			want:    "",
			blocked: true,
		},
		{
			name:   "benign chunks are all released, in order",
			chunks: []string{filler, filler, "the end."},
			want:   filler + filler + "the end.",
		},
		{
			name:   "a chunk without text passes, the held text is released at the end",
			chunks: []string{"short ", "", "answer."},
			want:   "short answer.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := testRunner(t, Gemini, Options{}, eng)
			got, blocked := stream(t, r, "s-"+strings.ReplaceAll(tc.name, " ", "-")[:20], tc.chunks)
			assert.Equal(t, tc.blocked, blocked)
			assert.NotContains(t, got, "AKIA")
			assert.NotContains(t, got, "FORB")
			if !tc.blocked {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

// TestGeminiStreamReleasesBehindTheHold: a long benign answer is shown as
// it streams, StreamHold bytes behind the model.
func TestGeminiStreamReleasesBehindTheHold(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, Gemini, Options{}, eng)
	chunk := strings.Repeat("x", 4096)
	var sent, seen int
	for i := range 6 {
		text, blocked := shown(t, chunk, r.Run(context.Background(), afterModel(t, "hold", chunk, false)))
		require.False(t, blocked)
		sent += len(chunk)
		seen += len(text)
		assert.Equal(t, max(0, sent-StreamHold), seen, "chunk %d", i)
	}
	text, _ := shown(t, "", r.Run(context.Background(), afterModel(t, "hold", "!", true)))
	assert.Equal(t, sent+1, seen+len(text), "the last chunk flushes the rest")
}

// TestGeminiStreamBounded: an answer longer than MaxStreamBytes is blocked
// with CodeStreamTooLong, and the next answer starts afresh.
func TestGeminiStreamBounded(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, Gemini, Options{}, eng)
	chunk := strings.Repeat("y", 32<<10)
	var resp Response
	for range MaxStreamBytes/len(chunk) + 1 {
		resp = r.Run(context.Background(), afterModel(t, "big", chunk, false))
	}
	assert.Contains(t, string(resp.Stdout), `"decision":"deny"`)
	assert.Contains(t, string(resp.Stdout), "longer than")
	text, blocked := shown(t, "fresh", r.Run(context.Background(), afterModel(t, "big", "fresh", true)))
	assert.False(t, blocked)
	assert.Equal(t, "fresh", text)
}

// TestGeminiStreamForgottenByOtherEvents: a BeforeModel between two
// answers forgets the held text of an answer that never finished.
func TestGeminiStreamForgottenByOtherEvents(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, Gemini, Options{}, eng)
	text, _ := shown(t, "AKIAIOSF", r.Run(context.Background(), afterModel(t, "f", "held AKIAIOSF", false)))
	assert.Empty(t, text)
	before := `{"session_id":"f","cwd":"/p","hook_event_name":"BeforeModel","llm_request":{"messages":[{"role":"user","content":"hi"}]}}`
	r.Run(context.Background(), []byte(before))
	text, _ = shown(t, "ok.", r.Run(context.Background(), afterModel(t, "f", "ok.", true)))
	assert.Equal(t, "ok.", text)
}

// TestGeminiStreamRewriteOfShownText: a rewrite that changes text already
// shown cannot be honoured, so the rest of the answer is refused with
// CodeStreamRewritten; the same rewrite before anything was shown applies.
func TestGeminiStreamRewriteOfShownText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: rewrite-all
rules:
  - id: replace-answer
    phase: output
    condition: 'output.text.contains("ENDMARK")'
    verdict: modify
    modify:
      output: '"The answer was replaced."'
`), 0o644))
	eng := testEngine(t, path)
	filler := strings.Repeat("All is well here. ", 600)

	r := testRunner(t, Gemini, Options{}, eng)
	shownSoFar, blocked := stream(t, r, "late", []string{filler, "ENDMARK", "more"})
	assert.True(t, blocked)
	assert.NotEmpty(t, shownSoFar, "the start of the answer was shown before the rewrite")
	resp := r.Run(context.Background(), afterModel(t, "late2", filler, false))
	resp = r.Run(context.Background(), afterModel(t, "late2", "ENDMARK", false))
	assert.Contains(t, string(resp.Stdout), `"decision":"deny"`)
	assert.Contains(t, string(resp.Stdout), "already shown")

	got, blocked := stream(t, r, "early", []string{"short ", "ENDMARK", " end"})
	assert.False(t, blocked)
	assert.Equal(t, "The answer was replaced.", got)
}
