package eval_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// A stored state that failed its check is the writer's, and the engine
// reads it only for its halt: 4 MB of lists of empty objects (which,
// decoded as a SessionState, allocated over a gigabyte) cost almost
// nothing to read, whether the session is resumed for one event or
// decided on, and a halt is kept whatever else the state holds.
func TestStoredTamperedStateReadBounded(t *testing.T) {
	ctx := context.Background()
	set := mustSet(t, map[string]string{"r.yaml": `
rules:
  - id: never
    condition: 'false'
    verdict: block
`})
	forged := func(field, halted string) []byte {
		var b bytes.Buffer
		b.WriteString(`{"id":"s",` + halted + `"` + field + `":[`)
		for b.Len() < 4<<20 {
			b.WriteString(`{},`)
		}
		b.WriteString(`{}]}`)
		return b.Bytes()
	}
	for _, tc := range []struct {
		name    string
		state   []byte
		verdict policy.Verdict
	}{
		{"requests", forged("requests", ""), policy.Warn},
		{"recent, halted", forged("recent", `"halted":{"verdict":"halt"},`), policy.Halt},
		{"grants, halted, a turn that is not a number", forged("grants", `"turn":"x","halted":{},`), policy.Halt},
		{"halted null", []byte(`{"id":"s","halted":null}`), policy.Warn},
	} {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/resume=%v", tc.name, resume), func(t *testing.T) {
				st := &tamperStore{fault: "the session state was changed outside celguard (its MAC does not check)", untrusted: tc.state}
				eng, err := eval.New(set, eval.WithStore(st))
				require.NoError(t, err)
				var d eval.Decision
				n := allocatedBy(func() {
					s := eng.NewSession("s", nil)
					if resume {
						s, err = eng.ResumeSession(ctx, "s", nil)
						require.NoError(t, err)
					}
					d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
				})
				require.NoError(t, err)
				assert.True(t, d.StateTampered)
				assert.Equal(t, tc.verdict, d.Verdict)
				assert.Less(t, n, uint64(8<<20), "a forged state of %d bytes made %d bytes of allocation", len(tc.state), n)
			})
		}
	}
}

// allocatedBy is the bytes the heap allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
