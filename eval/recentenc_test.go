package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/internal/jsonkind"
	"github.com/celguard/celguard/policy"
)

// The encodings of recent calls (stateenc.go): each one's against
// json.Marshal, and the ones a session keeps against its calls.

// TestRecentEncodingsFollowCalls holds the kept encodings of the recent
// calls to the calls: after any mix of calls before and after they ran,
// status changes, drops past MaxRecent, restores and encodings, the state
// encoded with them is json.Marshal's of the state, byte for byte.
func TestRecentEncodingsFollowCalls(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 7))
	var f sessionFacts
	memo := &stateMemo{}
	var held struct{ js, was []byte } // the snapshot's encoding, and a copy
	verdicts := []policy.Verdict{policy.Allow, policy.Ask, policy.Block, policy.Warn}
	for step := range 4000 {
		call := Call{Tool: []string{"Bash", "Read", "a<b"}[r.IntN(3)], Args: map[string]any{"command": fmt.Sprint("c", r.IntN(6), []string{"", " && x", " é"}[r.IntN(3)])}}
		if r.IntN(3) == 0 {
			call.ID = fmt.Sprint("id", r.IntN(20))
		}
		if r.IntN(4) == 0 {
			call.Args["issue_id"] = float64(r.IntN(5))
		}
		switch r.IntN(12) {
		case 0:
			f.restoreRecent(append([]RecentCall(nil), f.recent...), f.seq)
		case 1:
			f.restoreRecent(nil, 0)
		case 2, 3, 4:
			f.noteRecent(policy.PhaseAfter, call, &Result{IsError: r.IntN(2) == 0}, Decision{}, uint64(r.IntN(3)))
		default:
			f.noteRecent(policy.PhaseBefore, call, nil, Decision{Verdict: verdicts[r.IntN(len(verdicts))], RuleRef: compile.RuleRef{RuleID: "r"}}, uint64(r.IntN(3)))
		}
		if r.IntN(3) == 0 {
			continue // not encoded after every step: encodings stay unmade
		}
		st := SessionState{ID: "s", Turn: 1, Recent: f.recent, RecentSeq: f.seq}
		// Lent or copied, as the store takes it; the snapshot keeps the
		// last encoding, or sometimes not (a commit that failed).
		got, err := encodeStateKept(&st, memo, nil, f.recentEncodings(st.Recent), held.js, r.IntN(4) != 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(SessionState{ID: "s", Turn: 1, Recent: slices.Clone(f.recent), RecentSeq: f.seq})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("step %d: the state encoded with the kept encodings is\n%s\njson.Marshal's is\n%s", step, got, want)
		}
		if held.js != nil && !bytes.Equal(held.js, held.was) {
			t.Fatalf("step %d: the encoding the snapshot keeps changed:\n%s\nwas\n%s", step, held.js, held.was)
		}
		if r.IntN(5) != 0 {
			held.js, held.was = got, bytes.Clone(got)
		}
	}
}

// TestRecentEncodingsOnlyOwn: encodings are kept only for the session's
// own recent calls, not for a copy of them or a slice of another length.
func TestRecentEncodingsOnlyOwn(t *testing.T) {
	var f sessionFacts
	if f.recentEncodings(nil) != nil {
		t.Error("encodings kept for no calls")
	}
	for i := range 3 {
		f.noteRecent(policy.PhaseBefore, Call{Tool: fmt.Sprint("T", i)}, nil, Decision{Verdict: policy.Allow}, 1)
	}
	if got := f.recentEncodings(f.recent); len(got) != 3 {
		t.Errorf("%d encodings kept for the session's 3 calls", len(got))
	}
	if f.recentEncodings(slices.Clone(f.recent)) != nil {
		t.Error("encodings kept for a copy of the calls")
	}
	if f.recentEncodings(f.recent[:2]) != nil {
		t.Error("encodings kept for a part of the calls")
	}
}

// FuzzAppendRecentCall: a recent call's encoding is json.Marshal's, byte
// for byte, whatever its strings hold.
func FuzzAppendRecentCall(f *testing.F) {
	for _, s := range randStrings {
		f.Add(uint64(1), s, "Bash", "allow", s, "ok")
	}
	f.Add(uint64(1<<63), "", "", "", "", "")
	f.Add(uint64(7), "a\x7fb", "<", ">", "&", "\\")
	f.Fuzz(func(t *testing.T, seq uint64, callID, tool, verdict, summary, id string) {
		r := RecentCall{Seq: seq, Turn: seq / 3, CallID: callID, Tool: tool, Verdict: verdict, RuleID: summary + tool,
			Code: verdict, Digest: tool + callID, Summary: summary, Status: id}
		if id != "" {
			r.IDs = map[string]string{id: callID, "id": summary}
		}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendRecentCall([]byte("x"), &r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendRecentCall differs from json.Marshal:\n got %s\nwant %s", got[1:], want)
		}
	})
}

// TestJSONPlain: every byte jsonPlain lets through, json.Marshal writes as
// it is; every other it escapes or checks.
func TestJSONPlain(t *testing.T) {
	for c := range 256 {
		s := string([]byte{'a', byte(c)})
		js, _ := json.Marshal(s)
		asIs := string(js) == `"`+s+`"`
		if jsonkind.Plain(s) && !asIs {
			t.Errorf("byte %#x: jsonkind.Plain, but json.Marshal writes %s", c, js)
		}
		if !jsonkind.Plain(s) && c >= 0x20 && c < 0x7f && asIs && c != '"' && c != '\\' {
			t.Logf("byte %#x: written as it is by json.Marshal, left to it", c)
		}
	}
}
