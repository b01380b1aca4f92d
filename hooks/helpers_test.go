package hooks

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// deferAsk leaves ask verdicts to the host, as `celguard hook` does.
var deferAsk = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Defer}, nil
})

// testEngine compiles the policy files at paths, or the built-in policies
// when there are none.
func testEngine(t testing.TB, paths ...string) *eval.Engine {
	t.Helper()
	var srcs []policy.Source
	var err error
	if len(paths) == 0 {
		srcs, err = policies.Sources()
	} else {
		srcs, err = policy.LoadPaths(paths...)
	}
	require.NoError(t, err)
	set, err := compile.Compile(srcs)
	require.NoError(t, err)
	eng, err := eval.New(set, eval.WithApprover(deferAsk))
	require.NoError(t, err)
	return eng
}

// testRunner is a Runner for host over a fresh state directory.
func testRunner(t testing.TB, host string, opts Options, eng *eval.Engine) *Runner {
	t.Helper()
	h, err := New(host, opts)
	require.NoError(t, err)
	return &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir()}, Engine: func() (*eval.Engine, error) { return eng, nil }}
}
