package eval

import (
	"bytes"
	"encoding/json"
	"maps"
	"strconv"
)

// This file encodes a SessionState as the JSON a store keeps
// (state.Op.Write), byte for byte what json.Marshal makes of it, at a
// fraction of its cost: a decision commits its session's whole state, and
// encoding it by reflection, its 16 recent calls included, was most of
// what a store costs a decision (BENCHMARKS.md, "the state store's cost
// in serve's request"). The object's members are written here in SessionState's
// order with its omitempty rules; every value is still encoded by
// encoding/json, and a recent call's encoding is kept from one commit to
// the next while the call is unchanged (stateMemo), so a decision encodes
// the one call it records. TestEncodeStateDifferential and
// FuzzEncodeState hold the bytes to json.Marshal's over random states,
// every field of SessionState filled by reflection, so a field added to
// SessionState and not here fails them.

// stateMemo keeps, from one encoding of a session's state to the next, the
// encodings of what did not change: the session id's, and each recent
// call's. An entry is reused only when the value it was made from equals
// the value to encode, field by field, so a memo never makes an encoding
// differ from json.Marshal's; a stale entry is only a miss. A memo is used
// by one encoding at a time (the session's store lock).
type stateMemo struct {
	id   string
	idJS []byte
	// recent are the recent calls of the last encoding with their JSON,
	// spare the slice the next encoding builds its own in.
	recent, spare []*recentMemo
	// scratch is where the last encoding was made, kept for the next.
	scratch []byte
}

// recentMemo is a recent call and its JSON.
type recentMemo struct {
	r  RecentCall
	js []byte
}

// equalRecent reports whether a and b encode the same: every field of
// RecentCall is compared (TestEqualRecentFields).
func equalRecent(a, b *RecentCall) bool {
	return a.Seq == b.Seq && a.Turn == b.Turn && a.CallID == b.CallID && a.Tool == b.Tool &&
		a.Verdict == b.Verdict && a.RuleID == b.RuleID && a.Code == b.Code && a.Digest == b.Digest &&
		a.Summary == b.Summary && a.Status == b.Status && (a.IDs == nil) == (b.IDs == nil) &&
		(len(a.IDs) == 0 && len(b.IDs) == 0 || maps.Equal(a.IDs, b.IDs))
}

// encodeState is json.Marshal(st), with memo's encodings of what did not
// change since its last use (memo may be nil). The result is a new slice,
// which the caller may hand to a store.
func encodeState(st *SessionState, memo *stateMemo) ([]byte, error) {
	var b []byte
	if memo != nil {
		b = memo.scratch[:0]
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
	if b, err = appendMembers(b, st); err != nil {
		return nil, err
	}
	if b, err = appendFacts(b, st, memo); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if memo == nil {
		return b, nil
	}
	// The encoding is made in the memo's scratch space and handed out in
	// a slice of its own size, which a store keeps.
	memo.scratch = b
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
func appendFacts(b []byte, st *SessionState, memo *stateMemo) (_ []byte, err error) {
	if st.LabelsLost {
		b = append(b, `,"labels_lost":true`...)
	}
	if len(st.Recent) > 0 {
		if b, err = appendRecent(b, st.Recent, memo); err != nil {
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

// find is the memo's entry for r, the i-th recent call to encode, if it
// has one that did not change. Calls keep their order from one encoding to
// the next, the oldest leaving, so the search starts where r's is likely.
func (memo *stateMemo) find(r *RecentCall, i int) *recentMemo {
	if memo == nil {
		return nil
	}
	n := len(memo.recent)
	if n == 0 {
		return nil
	}
	start := 0
	if d := r.Seq - memo.recent[0].r.Seq; d < uint64(n) {
		start = int(d)
	} else if i < n {
		start = i
	}
	for k := range n {
		m := memo.recent[(start+k)%n]
		if m.r.Seq == r.Seq && equalRecent(&m.r, r) {
			return m
		}
	}
	return nil
}

// appendRecent appends the recent calls' member, each call's JSON taken
// from memo when the call did not change since memo's last encoding.
func appendRecent(b []byte, rs []RecentCall, memo *stateMemo) ([]byte, error) {
	b = append(b, `,"recent":[`...)
	var next []*recentMemo
	if memo != nil {
		next = memo.spare[:0]
	}
	for i := range rs {
		r := &rs[i]
		if i > 0 {
			b = append(b, ',')
		}
		if m := memo.find(r, i); m != nil {
			b = append(b, m.js...)
			next = append(next, m)
			continue
		}
		js, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		b = append(b, js...)
		if memo != nil {
			kept := *r
			kept.IDs = maps.Clone(r.IDs) // the memo's own: a later change of r's is a miss
			next = append(next, &recentMemo{r: kept, js: js})
		}
	}
	if memo != nil {
		clear(memo.recent)
		memo.recent, memo.spare = next, memo.recent[:0]
	}
	return append(b, ']'), nil
}
