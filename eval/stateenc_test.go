package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/policy"
)

// randState is a SessionState with every exported field, at every depth,
// filled with random values by reflection (so a field added to
// SessionState, or to a type it holds, is filled too), some left empty
// so that omitempty is exercised both ways.
func randState(r *rand.Rand) SessionState {
	var st SessionState
	fillRand(r, reflect.ValueOf(&st).Elem(), 0)
	return st
}

// randStrings are strings encoding/json escapes in every way it does: HTML
// characters, quotes and backslashes, control characters, U+2028 and
// U+2029, invalid UTF-8, and long text.
var randStrings = []string{"", "a", "Bash", "<script>&amp;</script>", `quote " back \ slash`, "tab\tnl\ncr\r\x00\x1f",
	"line\u2028para\u2029", "bad \xff\xfe utf8 \xc3", "é漢字🙂", strings.Repeat("long ", 40), "rule-1", "pending"}

func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	return randStrings[r.IntN(len(randStrings))]
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fillSpecial fills the types whose values are not any of their kind's:
// times (in UTC or a fixed zone) and raw JSON (valid, perhaps with spaces
// that encoding/json compacts); it reports whether v was one.
func fillSpecial(r *rand.Rand, v reflect.Value, depth int) bool {
	switch v.Type() {
	case timeType:
		t := time.Unix(r.Int64N(4e9), r.Int64N(1e9))
		if r.IntN(2) == 0 {
			t = t.In(time.FixedZone("z", (r.IntN(48)-24)*1800))
		} else {
			t = t.UTC()
		}
		v.Set(reflect.ValueOf(t))
		return true
	case rawType:
		js, _ := json.Marshal(randAny(r, depth+1))
		if r.IntN(3) == 0 {
			js = append([]byte(" \n"), append(js, '\t')...)
		}
		v.SetBytes(js)
		return true
	}
	return false
}

// fillRand fills v, and everything it holds, with random values.
func fillRand(r *rand.Rand, v reflect.Value, depth int) {
	if depth > 0 && r.IntN(4) == 0 {
		return // left at its zero value
	}
	if fillSpecial(r, v, depth) {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randString(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
		if v.Kind() != reflect.Int64 && v.Kind() != reflect.Int {
			v.SetInt(int64(r.IntN(8)))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(r.Uint64N(1 << 50))
		if v.Kind() == reflect.Uint8 || v.Kind() == reflect.Uint16 || v.Kind() == reflect.Uint32 {
			v.SetUint(uint64(r.IntN(200)))
		}
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(r.IntN(1e6)) / 8)
	case reflect.Pointer:
		if depth > 6 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRand(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 6 {
			return
		}
		n := r.IntN(4)
		if v.Type().Elem().Kind() == reflect.Struct && depth == 0 {
			n = r.IntN(MaxRecent + 2)
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRand(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 6 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			fillRand(r, k, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fillRand(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if a := randAny(r, depth+1); a != nil {
			v.Set(reflect.ValueOf(a))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRand(r, v.Field(i), depth+1)
			}
		}
	}
}

// randAny is a JSON-like value, as tool arguments and metadata are.
func randAny(r *rand.Rand, depth int) any {
	switch k := r.IntN(7); {
	case k == 0 || depth > 5:
		return randString(r)
	case k == 1:
		return float64(r.IntN(1e6)) / 4
	case k == 2:
		return r.IntN(2) == 0
	case k == 3:
		return nil
	case k == 4:
		var l []any
		for range r.IntN(3) {
			l = append(l, randAny(r, depth+1))
		}
		return l
	default:
		m := map[string]any{}
		for range r.IntN(3) {
			m[randString(r)] = randAny(r, depth+1)
		}
		return m
	}
}

// checkEncoding fails unless encodeStateKept(st, memo, nil, nil, nil, false) is
// json.Marshal(st), byte for byte, or both fail.
func checkEncoding(t *testing.T, st *SessionState, memo *stateMemo) {
	t.Helper()
	want, werr := json.Marshal(st)
	got, gerr := encodeStateKept(st, memo, nil, nil, nil, false)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("json.Marshal: %v, encodeState: %v", werr, gerr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeState differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
}

// mutate changes st as decisions do between two commits: a call recorded
// (the oldest leaving past MaxRecent), a call's status, its ids in place,
// the turn, or any other field made new.
func mutate(r *rand.Rand, st *SessionState) {
	switch r.IntN(6) {
	case 0:
		var rc RecentCall
		fillRand(r, reflect.ValueOf(&rc).Elem(), 1)
		st.RecentSeq++
		rc.Seq = st.RecentSeq
		st.Recent = append(st.Recent, rc)
		if len(st.Recent) > MaxRecent {
			st.Recent = st.Recent[1:]
		}
	case 1:
		if len(st.Recent) > 0 {
			st.Recent[r.IntN(len(st.Recent))].Status = randString(r)
		}
	case 2:
		// In place, as no code of the engine does: nothing of an
		// encoding may be kept from one state to the next but the id's.
		for i := range st.Recent {
			if st.Recent[i].IDs != nil {
				st.Recent[i].IDs[randString(r)] = randString(r)
				break
			}
		}
	case 3:
		st.Turn++
	case 4:
		if len(st.Recent) > 0 {
			i := r.IntN(len(st.Recent))
			fillRand(r, reflect.ValueOf(&st.Recent[i]).Elem(), 1)
		}
	default:
		other := randState(r)
		f := r.IntN(reflect.TypeFor[SessionState]().NumField())
		reflect.ValueOf(st).Elem().Field(f).Set(reflect.ValueOf(other).Field(f))
	}
}

// TestEncodeStateDifferential: the store's encoding of a session state is
// json.Marshal's, byte for byte, over random states, without a memo and
// through one memo across a sequence of changed states.
func TestEncodeStateDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		st := randState(r)
		checkEncoding(t, &st, nil)
		memo := &stateMemo{}
		for range 8 {
			checkEncoding(t, &st, memo)
			mutate(r, &st)
		}
	}
}

// TestEncodeStateFields: every field of SessionState is encoded. A field
// the random states leave empty would hide from the differential test, so
// this one fills each in turn.
func TestEncodeStateFields(t *testing.T) {
	typ := reflect.TypeFor[SessionState]()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range typ.NumField() {
		seen := false
		for range 200 {
			var st SessionState
			f := reflect.ValueOf(&st).Elem().Field(i)
			fillRand(r, f, 0)
			if f.IsZero() {
				continue
			}
			seen = true
			checkEncoding(t, &st, nil)
			checkEncoding(t, &st, &stateMemo{})
		}
		if !seen {
			t.Errorf("field %s was never filled", typ.Field(i).Name)
		}
	}
}

// TestEncodeStateMemoAliasing: an encoding the memo made stays what it
// was when the state it was made from changes afterwards (a committed
// state's bytes never change), and the next encoding sees the change.
func TestEncodeStateMemoAliasing(t *testing.T) {
	st := SessionState{ID: "s", Turn: 1, RecentSeq: 2, Recent: []RecentCall{
		{Seq: 1, Turn: 1, Tool: "Bash", Verdict: "allow", Digest: "d1", Status: RecentPending, IDs: map[string]string{"id": "7"}},
		{Seq: 2, Turn: 1, Tool: "Read", Verdict: "allow", Digest: "d2", Status: RecentPending},
	}}
	memo := &stateMemo{}
	first, err := encodeStateKept(&st, memo, nil, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	kept := bytes.Clone(first)
	st.Recent[0].IDs["id"] = "8"
	st.Recent[1].Status = RecentOK
	second, err := encodeStateKept(&st, memo, nil, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, kept) {
		t.Fatalf("a committed encoding changed:\n%s\n%s", first, kept)
	}
	want, _ := json.Marshal(st)
	if !bytes.Equal(second, want) {
		t.Fatalf("the memo hid a change:\n got %s\nwant %s", second, want)
	}
	// Appending to one encoding does not write into another's array.
	third, _ := encodeStateKept(&st, memo, nil, nil, nil, false)
	_ = append(second, "tail"...)
	if !bytes.Equal(third, want) {
		t.Fatalf("encodings share their arrays: %s", third)
	}
}

// FuzzEncodeState: the differential over states and sequences of changes
// drawn from the fuzzer's seeds.
func FuzzEncodeState(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s, uint8(4))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		r := rand.New(rand.NewPCG(seed, uint64(steps)))
		st := randState(r)
		memo := &stateMemo{}
		for range int(steps%32) + 1 {
			checkEncoding(t, &st, memo)
			mutate(r, &st)
		}
	})
}

// TestEncodeStateAllocs: encoding a session's state after one call was
// recorded encodes that call alone, into the array of the call that left,
// and allocates only the encoding handed out (json.Marshal's reflection
// over the whole state made 20 and more; the memo of recent calls it
// replaced, 3).
func TestEncodeStateAllocs(t *testing.T) {
	defer func(check bool) { checkRecentEncodings = check }(checkRecentEncodings)
	checkRecentEncodings = false // its own encodings allocate
	var f sessionFacts
	memo := &stateMemo{}
	var calls []Call
	for i := range 7 {
		calls = append(calls, Call{Tool: "Bash", Args: map[string]any{"command": fmt.Sprint("ls ", i)}})
	}
	i := 0
	var held []byte // the encoding the snapshot keeps
	lend := false
	step := func() {
		i++
		f.noteRecent(policy.PhaseBefore, calls[i%len(calls)], nil, Decision{Verdict: policy.Allow}, 1)
		st := SessionState{ID: "s", Turn: 1, Recent: f.recent, RecentSeq: f.seq}
		js, err := encodeStateKept(&st, memo, nil, f.recentEncodings(st.Recent), held, lend)
		if err != nil {
			t.Fatal(err)
		}
		held = js
	}
	for range MaxRecent + 1 {
		step()
	}
	// recentOf's own allocations (the digest, the summary) are not the
	// encoding's: counted apart and taken off.
	own := testing.AllocsPerRun(100, func() { _ = recentOf(calls[1], Decision{Verdict: policy.Allow}, 1, 1) })
	if n := testing.AllocsPerRun(100, step) - own; n > 1+raceAllocSlack {
		t.Errorf("%.1f allocations to encode a state with one new recent call, want at most 1 (race detector's slack %d)", n, raceAllocSlack)
	}
	// Lent to a store that copies what it keeps: none.
	lend = true
	step()
	if n := testing.AllocsPerRun(100, step) - own; n > raceAllocSlack {
		t.Errorf("%.1f allocations to encode a state with one new recent call into the memo's buffers, want none (race detector's slack %d)", n, raceAllocSlack)
	}
}
