package eval_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// argsPolicy reads arguments through compile.ArgString variables (a chain,
// a default) and through the same reads written otherwise, and matches
// variables against patterns (compile.VarMatches), one of them not always
// a string, so that a call whose arguments are not plain strings decides
// through the program.
const argsPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: args
variables:
  - {name: cmd, expression: 'has(args.command) ? string(args.command) : ""'}
  - {name: where, expression: 'has(args.file_path) ? string(args.file_path) : has(args.path) ? string(args.path) : "nowhere"'}
  - {name: raw, expression: 'has(args.command) ? args.command : ""'}
rules:
  - {id: raw-rm, priority: 25, condition: 'raw.matches("^rm -rf")', verdict: block, reason: 'raw {{ cmd }}'}
  - {id: where-ssh, priority: 24, condition: 'where.matches("\\.ssh/")', verdict: ask, reason: ssh}
  - {id: numeric-command, priority: 30, condition: 'has(args.command) && type(args.command) == int && cmd == "42"', verdict: warn, reason: 'numeric {{ cmd }}'}
  - {id: rm, priority: 20, condition: 'where.endsWith(".env") || cmd.contains("rm ")', verdict: block, reason: 'cmd={{ cmd }} where={{ where }}'}
  - {id: nowhere, priority: 10, condition: 'where == "nowhere" && cmd == ""', verdict: ask, reason: nothing}
`

// argsPolicy2 has a variable of argsPolicy's name with another value, and
// a rule between argsPolicy's by priority: the rules read each policy's own.
const argsPolicy2 = `apiVersion: celguard.dev/v1
kind: Policy
name: args2
variables:
  - {name: cmd, expression: 'has(args.path) ? string(args.path) : "p"'}
rules:
  - {id: two-cmd, priority: 15, condition: 'cmd == "/repo/.env" || cmd.startsWith("rm")', verdict: warn, reason: 'cmd={{ cmd }}'}
`

// oddArgs are calls whose arguments are not all strings: a number, null, a
// list, a map, bytes, where the policies read strings.
func oddArgs() []eval.Call {
	vals := []any{42, int64(42), nil, []any{"rm -rf /"}, map[string]any{"a": "b"}, []byte("rm x"), 2.5, true, "rm -rf /"}
	var out []eval.Call
	for _, v := range vals {
		for _, tool := range []string{"Bash", "Write", "Read", "mcp__x__y"} {
			out = append(out,
				eval.Call{Tool: tool, Args: map[string]any{"command": v}, Cwd: "/repo"},
				eval.Call{Tool: tool, Args: map[string]any{"file_path": v, "command": "ls"}, Cwd: "/repo"},
				eval.Call{Tool: tool, Args: map[string]any{"path": v}, Cwd: "/repo"},
				eval.Call{Tool: tool, Args: map[string]any{"file_path": "/repo/.env", "path": v}, Cwd: "/repo"},
				eval.Call{Tool: tool, Cwd: "/repo"})
		}
	}
	return out
}

// TestLinearFastPathsDifferential decides the same calls twice, in two
// sessions of two engines over the same set, one with linear programs
// evaluated as before (eval.PlainLinear: cel-go with a frame per
// evaluation, no compile.ArgString, variables looked up by name) and one as
// now: every decision (verdict,
// rule, reason, code, approval, rewrite, everything in it), every error and
// the session's state after each call (counters, recent calls) are the same.
// Over the loadgen stream with the 20-rule policy, the realistic session and
// the stream with the recommended bundle, and calls with arguments that are
// not strings with argsPolicy and argsPolicy2 (a variable name two
// policies declare).
func TestLinearFastPathsDifferential(t *testing.T) {
	recSrcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	require.NoError(t, err)
	stream := benchdata.Stream(2000)
	var session []eval.Call
	var results []eval.Result
	for _, sc := range benchdata.Session() {
		session = append(session, sc.Call)
		results = append(results, sc.Result)
	}
	cases := []struct {
		name    string
		srcs    []policy.Source
		calls   []eval.Call
		results []eval.Result
	}{
		{"policy20-stream", []policy.Source{benchdata.Source20()}, stream, nil},
		{"policy20-odd-args", []policy.Source{benchdata.Source20()}, oddArgs(), nil},
		{"recommended-session", recSrcs, session, results},
		{"recommended-stream", recSrcs, stream[:600], nil},
		{"recommended-odd-args", recSrcs, oddArgs(), nil},
		{"args-odd-args", []policy.Source{{Name: "args.yaml", Data: []byte(argsPolicy)}, {Name: "args2.yaml", Data: []byte(argsPolicy2)}}, oddArgs(), nil},
	}
	clock := func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := compile.Compile(tc.srcs)
			require.NoError(t, err)
			session := func() *eval.Session {
				eng, err := eval.New(set, eval.WithApprover(approveAll), eval.WithClock(clock))
				require.NoError(t, err)
				return eng.NewSession("diff", nil)
			}
			plain, fast := session(), session()
			decided := map[string]int{} // by rule, "" for a default
			for i, c := range tc.calls {
				restore := eval.PlainLinear()
				want, werr := plain.Before(ctx, c)
				restore()
				got, gerr := fast.Before(ctx, c)
				require.Equal(t, werr, gerr, "call %d %v", i, c)
				require.Equal(t, want, got, "call %d %v", i, c)
				decided[got.RuleID]++
				if tc.results != nil {
					restore := eval.PlainLinear()
					want, werr := plain.After(ctx, c, tc.results[i])
					restore()
					got, gerr := fast.After(ctx, c, tc.results[i])
					require.Equal(t, werr, gerr, "result %d %v", i, c)
					require.Equal(t, want, got, "result %d %v", i, c)
				}
				require.Equal(t, plain.State(), fast.State(), "state after call %d %v", i, c)
			}
			assert.Greater(t, len(decided), 2, "rules decide the calls (asks are approved): %v", decided)
		})
	}
}
