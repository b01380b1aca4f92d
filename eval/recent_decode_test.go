package eval

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recentDecodeInputs are session.recent lists as JSON: as states hold
// them, and odd ones (nulls, missing and unknown fields, wrong types,
// escapes, a field twice).
var recentDecodeInputs = []string{
	`[]`, `null`, `[null]`,
	`[{"seq":1,"turn":1,"call_id":"toolu_1","tool":"Bash","verdict":"allow","rule":"allow-safe-shell","digest":"e4325acf55ee341b","summary":"go test ./...","status":"pending"}]`,
	`[{"seq":1,"turn":1,"tool":"Bash","verdict":"allow","digest":"a","status":"ok"},{"seq":2,"turn":1,"tool":"Read","verdict":"block","code":"x","digest":"b","ids":{"id":"7","pr_number":"12"},"status":"refused"}]`,
	`[{"seq":2,"turn":1,"tool":"Read","verdict":"block","code":"x","digest":"b","ids":{},"status":"refused"}]`,
	`[{"seq":3,"tool":"T\u00e9","summary":"a \"quoted\" \\ one","unknown":[1,2,{"x":null}],"status":"asked"}]`,
	`[{"seq":4,"seq":5,"tool":"dup"}]`,
	`[{"seq":"one","tool":"Bash"}]`, `[{"ids":{"id":7}}]`, `[{"seq":-1}]`, `[{"seq":1.5}]`, `[1]`, `["x"]`,
	`[{"seq":1,"tool":"Bash","verdict":"allow","digest":"a","status":"ok"},{"seq":1,"tool":"Bash","verdict":"allow","digest":"a","status":"ok"}]`,
	`[{"ids":null,"tool":null,"seq":null}]`,
}

// TestRecentDecodeIsJSON: recent calls decode, cold and remembered, to
// exactly what encoding/json makes of the same bytes without
// RecentCall.UnmarshalJSON, with the same outcome (an error or none).
func TestRecentDecodeIsJSON(t *testing.T) {
	for _, in := range recentDecodeInputs {
		checkRecentDecode(t, []byte(in))
	}
}

func checkRecentDecode(t *testing.T, in []byte) {
	t.Helper()
	var want []recentJSON
	werr := json.Unmarshal(in, &want)
	for try := range 3 {
		var got []RecentCall
		gerr := json.Unmarshal(in, &got)
		require.Equal(t, werr == nil, gerr == nil, "%s (try %d): %v, want %v", in, try, gerr, werr)
		if werr != nil {
			continue
		}
		require.Equal(t, len(want), len(got), "%s", in)
		for i := range want {
			require.True(t, reflect.DeepEqual(RecentCall(want[i]), got[i]), "%s (try %d): %#v, want %#v", in, try, got[i], want[i])
		}
		// Each decoding owns its maps.
		for i := range got {
			if got[i].IDs != nil {
				got[i].IDs["changed"] = "yes"
			}
		}
	}
	// In a state, decoded twice.
	st := []byte(`{"id":"s","recent":` + string(in) + `}`)
	var a, b SessionState
	aerr, berr := json.Unmarshal(st, &a), json.Unmarshal(st, &b)
	require.Equal(t, werr == nil, aerr == nil, "%s", in)
	require.Equal(t, werr == nil, berr == nil, "%s", in)
	if werr == nil {
		require.True(t, reflect.DeepEqual(a, b), "%s", in)
	}
}

// FuzzRecentDecode: for any bytes, as TestRecentDecodeIsJSON.
func FuzzRecentDecode(f *testing.F) {
	for _, in := range recentDecodeInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkRecentDecode(t, in)
	})
}

// TestRecentDecodeIntoSetFields: decoding into a RecentCall that already
// holds values merges as encoding/json does (fields absent from the JSON
// keep theirs), never from memory; zero knows every field.
func TestRecentDecodeIntoSetFields(t *testing.T) {
	in := []byte(`{"seq":9,"tool":"Bash","verdict":"allow","digest":"a","status":"ok"}`)
	var warm RecentCall
	require.NoError(t, json.Unmarshal(in, &warm)) // remembered
	got := RecentCall{RuleID: "kept", IDs: map[string]string{"id": "1"}}
	require.NoError(t, json.Unmarshal(in, &got))
	want := recentJSON{RuleID: "kept", IDs: map[string]string{"id": "1"}}
	require.NoError(t, json.Unmarshal(in, &want))
	assert.Equal(t, RecentCall(want), got)

	v := reflect.ValueOf(&RecentCall{}).Elem()
	for i := range v.NumField() {
		r := RecentCall{}
		f := reflect.ValueOf(&r).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Uint64:
			f.SetUint(1)
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		default:
			t.Fatalf("RecentCall.%s: a field of kind %s that zero does not know", v.Type().Field(i).Name, f.Kind())
		}
		assert.False(t, r.zero(), "zero misses RecentCall.%s", v.Type().Field(i).Name)
	}
	assert.True(t, (&RecentCall{}).zero())
}
