package eval_test

import (
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policytest"
)

// TestFastProgramsWithinProvenBound runs every built-in policy's test suite
// and, for every expression evaluated without cost accounting (because the
// compiler proved its worst-case cost within the limit for inputs of the
// call's size), evaluates it again with the accounting: the result must be
// the same and the actual cost within the proven bound. It fails if the
// suites never take the fast path, so it cannot pass vacuously.
func TestFastProgramsWithinProvenBound(t *testing.T) {
	fast := 0
	defer eval.CheckFast(func(p *compile.Program, size uint64, det *cel.EvalDetails, fastOut, trackedOut ref.Val, fastErr, trackedErr error) {
		fast++
		upTo, bound := p.FastUpTo()
		assert.LessOrEqual(t, size, upTo, "the fast program serves inputs up to its proven size only")
		require.NoError(t, trackedErr, "an expression proven within the limit failed with accounting")
		require.NotNil(t, det)
		actual := det.ActualCost()
		require.NotNil(t, actual)
		if upTo < ^uint64(0) {
			assert.LessOrEqual(t, *actual, bound, "actual cost over the proven bound (input size %d, proven up to %d)", size, upTo)
		}
		assert.Equal(t, fastErr == nil, trackedErr == nil)
		if fastOut != nil && trackedOut != nil {
			if types.IsError(fastOut) || types.IsError(trackedOut) {
				assert.Equal(t, types.IsError(trackedOut), types.IsError(fastOut), "one program failed: %v / %v", trackedOut, fastOut)
			} else {
				assert.Equal(t, types.True, trackedOut.Equal(fastOut), "the two programs disagree: %v / %v", trackedOut, fastOut)
			}
		}
	})()
	rep, err := policytest.RunFS(t.Context(), policies.FS(), ".", policytest.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "the built-in suites pass")
	t.Logf("%d evaluations without cost accounting checked", fast)
	assert.Greater(t, fast, 100, "the built-in suites exercise the fast programs")
}
