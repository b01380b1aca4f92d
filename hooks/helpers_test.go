package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store"
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

// testRunner is a Runner for host over a fresh state directory, deciding
// with eng's policies and deferAsk (the approver of every engine the tests
// pass it: testEngine's, builtinEngine's), its sessions kept in the state
// directory through the file store, as `celguard hook` keeps them. A test
// that needs other engine options passes a nil eng and sets Engine with
// storedEngine.
func testRunner(t testing.TB, host string, opts Options, eng *eval.Engine) *Runner {
	t.Helper()
	h, err := New(host, opts)
	require.NoError(t, err)
	r := &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir()}}
	if eng != nil {
		r.Engine = storedEngine(eng.PolicySet(), r, eval.WithApprover(deferAsk))
	}
	return r
}

// storedEngine is a Runner.Engine deciding with set and opts, its sessions
// kept in r.Store through the file store (eval.WithStore of
// store.NewFileDir, as celguard.Config.Store does for the hook): one
// engine, made again when the test replaces r.Store (a new process, whose
// state directory reads its key again).
func storedEngine(set *compile.PolicySet, r *Runner, opts ...eval.Option) func() (*eval.Engine, error) {
	var (
		eng *eval.Engine
		dir *statedir.Dir
	)
	return func() (*eval.Engine, error) {
		if eng == nil || dir != r.Store {
			e, err := eval.New(set, append(slices.Clone(opts), eval.WithStore(store.NewFileDir(r.Store)))...)
			if err != nil {
				return nil, err
			}
			eng, dir = e, r.Store
		}
		return eng, nil
	}
}

// loadState reads session id's state under its lock, as a test (or an
// attacker) reads the file: the state of a new session when there is none.
func loadState(ls *statedir.Locked, id string) (eval.SessionState, bool, error) {
	st := eval.SessionState{ID: id}
	raw, found, err := ls.Load()
	if err != nil || !found {
		return st, found, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, false, fmt.Errorf("the session state %s is signed but not valid (%v)", ls.Path(), err)
	}
	return st, true, nil
}

// saveState writes a session's state under its lock, signed, as only
// celguard can.
func saveState(ls *statedir.Locked, st eval.SessionState) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = ls.Save(raw)
	return err
}
