package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// TestApprovalsListMasksCredentials: `celguard approvals list` shows a
// pending request's call (and an approval's) masked as the decision log
// shows it: a GitHub token in the command is redacted, in text and in
// JSON, and the request is still the one approved (its digest).
func TestApprovalsListMasksCredentials(t *testing.T) {
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	src := policy.Source{Name: "ask.yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: ask\nrules:\n  - id: ask-push\n    match: {tools: [Bash]}\n    verdict: ask\n    reason: pushing needs a person\n")}
	set, err := compile.Compile([]policy.Source{src})
	require.NoError(t, err)
	eng, err := eval.New(set, eval.WithApprovalRequests())
	require.NoError(t, err)
	ctx := context.Background()
	sess := eng.NewSession("masked", nil)
	for _, cmd := range []string{"git push https://" + token + "@github.com/o/r", "curl -H 'Authorization: token " + token + "' api"} {
		d, err := sess.Before(ctx, eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}})
		require.NoError(t, err)
		require.Equal(t, eval.CodeApprovalRequired, d.Code)
	}
	reqs := sess.Requests()
	require.Len(t, reqs, 2)
	_, _, err = sess.Approve(ctx, reqs[1].ID, eval.GrantSession, "test")
	require.NoError(t, err)
	require.Contains(t, reqs[0].Summary, token, "control: the request itself keeps the exact call")

	dir := &statedir.Dir{Dir: t.TempDir()}
	ls, err := dir.Lock(ctx, "masked")
	require.NoError(t, err)
	raw, err := json.Marshal(sess.State())
	require.NoError(t, err)
	_, err = ls.Save(raw)
	require.NoError(t, err)
	require.NoError(t, ls.Close())

	for _, format := range []string{"text", "json"} {
		var out, errb bytes.Buffer
		code := runApprovalsList(ctx, approveParams{stateDir: dir.Dir, format: format, stdio: stdio{stdout: &out, stderr: &errb}})
		require.Equal(t, exitOK, code, errb.String())
		assert.NotContains(t, out.String(), token, format)
		assert.NotContains(t, out.String(), "ghp_", format)
		assert.Contains(t, out.String(), "[REDACTED:github_token]", format)
		assert.Contains(t, out.String(), "Bash: git push", format)
		if format == "json" {
			var got struct {
				Requests []struct {
					Digest string `json:"digest"`
				} `json:"requests"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &got))
			require.Len(t, got.Requests, 1)
			assert.Equal(t, reqs[0].Digest, got.Requests[0].Digest, "the digest is the exact call's")
		} else {
			assert.True(t, strings.Contains(out.String(), "Approvals: 1"), out.String())
		}
	}
}
