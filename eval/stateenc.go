package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/celguard/celguard/internal/jsonkind"
)

// This file encodes a SessionState as the JSON a store keeps
// (state.Op.Write), byte for byte what json.Marshal makes of it, at a
// fraction of its cost: a decision commits its session's whole state, and
// encoding it by reflection, its 16 recent calls included, was most of
// what a store costs a decision (BENCHMARKS.md, "the state store's cost
// in serve's request"). The object's members are written here in
// SessionState's order with its omitempty rules, and so are a recent
// call's (appendRecentCall); every other value, and every string JSON
// would escape, is still encoded by encoding/json. A session keeps each
// recent call's encoding until the call changes (sessionFacts.recentEnc,
// recent.go), so a decision encodes the one call it records.
// TestEncodeStateDifferential and FuzzEncodeState hold the bytes to
// json.Marshal's over random states, every field of SessionState filled
// by reflection, so a field added to SessionState and not here fails
// them; FuzzAppendRecentCall does the same for one recent call, and
// TestRecentEncodingsFollowCalls holds the kept encodings to the calls.

// stateMemo keeps, from one encoding of a session's state to the next, the
// session id's encoding and the two buffers encodings are made in. A memo
// is used by one encoding at a time (the session's store lock).
type stateMemo struct {
	id   string
	idJS []byte
	// bufs are where encodings are made: each in the one that does not
	// hold the encoding the session's snapshot keeps (encodeStateKept).
	bufs [2][]byte
}

// sameArray reports whether a and b start at the same array element: b is
// a buffer's encoding as encodeStateKept lent it, and a the buffer.
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// recentEncoding is the JSON of a recent call (appendRecentCall), when
// ok. Its array is the session's own: it is reused for a later call once
// this one leaves, and only ever copied into a state's encoding.
type recentEncoding struct {
	js []byte
	ok bool
}

// checkRecentEncodings, set by the package's tests, makes every encoding
// of a state check each kept encoding of a recent call against the call's
// encoding made afresh, and panic on a difference.
var checkRecentEncodings bool

// recentEncodings is where the encodings of rs are kept, rs being the
// recent calls of a view of the session's state (stateLocked); nil when
// rs are not the session's own calls. The caller holds s.mu.
func (f *sessionFacts) recentEncodings(rs []RecentCall) []recentEncoding {
	if len(rs) == 0 || len(rs) != len(f.recent) || &rs[0] != &f.recent[0] {
		return nil
	}
	if len(f.recentEnc) != len(f.recent) {
		if cap(f.recentEnc) < len(f.recent) {
			f.recentEnc = make([]recentEncoding, len(f.recent), MaxRecent)
		}
		f.recentEnc = f.recentEnc[:len(f.recent)]
		for i := range f.recentEnc {
			f.recentEnc[i].ok = false
		}
	}
	return f.recentEnc
}

// encodeState is json.Marshal(st). The result is a new slice, which the
// caller may hand to a store.
func encodeState(st *SessionState) ([]byte, error) {
	return encodeStateKept(st, nil, nil, nil, nil, false)
}

// encodeStateKept is encodeState with memo's encoding of the id (memo may
// be nil) and the kept encodings of st's recent calls (recentEncodings;
// nil: none), making those that are not ok. With a memo, the encoding is made in the memo's buffer that does not hold held,
// the encoding the session's snapshot keeps (snapshot.js), and the result
// is a copy of it; or, when lend is set, the buffer itself, for a store that
// copies what it keeps (state.WriteCopier): then only the snapshot may come
// to hold it, and the next encoding is made in the other buffer.
//
// meta, when not nil, is written as the meta member instead of one encoded
// from st.Meta, which is then empty (metaMemberLocked).
func encodeStateKept(st *SessionState, memo *stateMemo, meta []byte, kept []recentEncoding, held []byte, lend bool) ([]byte, error) {
	var b []byte
	buf := 0
	if memo != nil {
		if sameArray(memo.bufs[0], held) {
			buf = 1
		}
		b = memo.bufs[buf][:0]
	}
	var err error
	b = append(b, `{"id":`...)
	if memo != nil && memo.idJS != nil && memo.id == st.ID {
		b = append(b, memo.idJS...)
	} else {
		n := len(b)
		if b, err = appendJSON(b, st.ID); err != nil {
			return nil, err
		}
		if memo != nil {
			memo.id, memo.idJS = st.ID, append([]byte(nil), b[n:]...)
		}
	}
	b = append(b, meta...)
	if b, err = appendMembers(b, st); err != nil {
		return nil, err
	}
	if b, err = appendFacts(b, st, kept); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if memo == nil {
		return b, nil
	}
	memo.bufs[buf] = b
	if lend {
		return b[:len(b):len(b)], nil
	}
	// Handed out in a slice of its own size, which a store keeps.
	return bytes.Clone(b), nil
}

// appendMembers appends the members of st from meta to labels.
func appendMembers(b []byte, st *SessionState) (_ []byte, err error) {
	if len(st.Meta) > 0 {
		if b, err = appendMember(b, `,"meta":`, st.Meta); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"turn":`...)
	b = strconv.AppendUint(b, st.Turn, 10)
	if st.Halted != nil {
		if b, err = appendMember(b, `,"halted":`, st.Halted); err != nil {
			return nil, err
		}
	}
	if len(st.Counters) > 0 {
		if b, err = appendMember(b, `,"counters":`, st.Counters); err != nil {
			return nil, err
		}
	}
	if len(st.Approvals) > 0 {
		if b, err = appendMember(b, `,"approvals":`, st.Approvals); err != nil {
			return nil, err
		}
	}
	if len(st.Requests) > 0 {
		if b, err = appendMember(b, `,"requests":`, st.Requests); err != nil {
			return nil, err
		}
	}
	if len(st.Grants) > 0 {
		if b, err = appendMember(b, `,"grants":`, st.Grants); err != nil {
			return nil, err
		}
	}
	if len(st.Denials) > 0 {
		if b, err = appendMember(b, `,"denials":`, st.Denials); err != nil {
			return nil, err
		}
	}
	if len(st.Judgments) > 0 {
		if b, err = appendMember(b, `,"judgments":`, st.Judgments); err != nil {
			return nil, err
		}
	}
	if st.Saturated != nil {
		if b, err = appendMember(b, `,"saturated":`, st.Saturated); err != nil {
			return nil, err
		}
	}
	if len(st.RefusedCalls) > 0 {
		if b, err = appendMember(b, `,"refused_calls":`, st.RefusedCalls); err != nil {
			return nil, err
		}
	}
	if len(st.Labels) > 0 {
		if b, err = appendMember(b, `,"labels":`, st.Labels); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendFacts appends the members of st from labels_lost on: the
// session's facts (facts.go, recent.go, writes.go) and its stream.
func appendFacts(b []byte, st *SessionState, kept []recentEncoding) (_ []byte, err error) {
	if st.LabelsLost {
		b = append(b, `,"labels_lost":true`...)
	}
	if len(st.Recent) > 0 {
		if b, err = appendRecent(b, st.Recent, kept); err != nil {
			return nil, err
		}
	}
	if st.RecentSeq != 0 {
		b = append(b, `,"recent_seq":`...)
		b = strconv.AppendUint(b, st.RecentSeq, 10)
	}
	if len(st.Writes) > 0 {
		if b, err = appendMember(b, `,"writes":`, st.Writes); err != nil {
			return nil, err
		}
	}
	if st.WritesEvicted {
		b = append(b, `,"writes_evicted":true`...)
	}
	if len(st.Stream) > 0 {
		if b, err = appendMember(b, `,"gemini_stream":`, st.Stream); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendJSON appends json.Marshal(v).
func appendJSON(b []byte, v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, js...), nil
}

// appendMember appends a member's name (with its comma and colon) and
// json.Marshal(v).
func appendMember(b []byte, name string, v any) ([]byte, error) {
	return appendJSON(append(b, name...), v)
}

// appendRecent appends the recent calls' member, each call's JSON taken
// from kept when it is there (kept, when not nil, is as long as rs) and
// kept there when it is made.
func appendRecent(b []byte, rs []RecentCall, kept []recentEncoding) (_ []byte, err error) {
	b = append(b, `,"recent":[`...)
	for i := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		if kept == nil {
			if b, err = appendRecentCall(b, &rs[i]); err != nil {
				return nil, err
			}
			continue
		}
		k := &kept[i]
		if k.ok && checkRecentEncodings {
			if fresh, _ := appendRecentCall(nil, &rs[i]); !bytes.Equal(fresh, k.js) {
				panic(fmt.Sprintf("eval: the kept encoding of recent call %d is stale:\n%s\nmade afresh:\n%s", i, k.js, fresh))
			}
		}
		if !k.ok {
			js, err := appendRecentCall(k.js[:0], &rs[i])
			if err != nil {
				return nil, err
			}
			k.js, k.ok = js, true
		}
		b = append(b, k.js...)
	}
	return append(b, ']'), nil
}

// appendRecentCall appends json.Marshal(r): its members are written here,
// in RecentCall's order with its omitempty rules, and so is each string
// JSON writes as it is (jsonPlain); any other string, and the ids, are
// encoded by encoding/json.
func appendRecentCall(b []byte, r *RecentCall) (_ []byte, err error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"turn":`...)
	b = strconv.AppendUint(b, r.Turn, 10)
	if r.CallID != "" {
		b = appendString(append(b, `,"call_id":`...), r.CallID)
	}
	b = appendString(append(b, `,"tool":`...), r.Tool)
	b = appendString(append(b, `,"verdict":`...), r.Verdict)
	if r.RuleID != "" {
		b = appendString(append(b, `,"rule":`...), r.RuleID)
	}
	if r.Code != "" {
		b = appendString(append(b, `,"code":`...), r.Code)
	}
	b = appendString(append(b, `,"digest":`...), r.Digest)
	if r.Summary != "" {
		b = appendString(append(b, `,"summary":`...), r.Summary)
	}
	if len(r.IDs) > 0 {
		if b, err = appendMember(b, `,"ids":`, r.IDs); err != nil {
			return nil, err
		}
	}
	b = appendString(append(b, `,"status":`...), r.Status)
	return append(b, '}'), nil
}

// appendString appends json.Marshal(s): s between quotes when JSON writes
// it as it is (jsonkind.Plain), else encoding/json's encoding of it.
func appendString(b []byte, s string) []byte {
	if jsonkind.Plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	js, _ := json.Marshal(s) // a string always encodes
	return append(b, js...)
}
