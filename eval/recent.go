package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// This file keeps the session's recent call sequence, the fact rules read
// as session.recent (docs/policies.md, "Session facts"): the last
// MaxRecent calls, oldest first, each with its tool, the verdict and rule
// that decided it before it ran, a digest and a short summary of its
// arguments, the id-like arguments, and its status once its result came.
// Like the labels, it is part of SessionState, committed with the decision
// that records it through every store.

// MaxRecent is how many calls session.recent keeps; older ones leave it.
const MaxRecent = 16

// Bounds of a recent call's text, so that a session's state stays small
// (a 1,000-call session's hook state file stays well under 64 KiB).
const (
	maxRecentSummary = 128 // bytes of the summary
	maxRecentIDs     = 4   // id-like arguments kept
	maxRecentIDValue = 64  // bytes of each
	maxRecentName    = 128 // bytes of the tool name and rule id
)

// Statuses of a recent call.
const (
	RecentPending = "pending" // let through before it ran; no result yet
	RecentAsked   = "asked"   // asked a person; no result yet
	RecentRefused = "refused" // blocked or halted before it ran
	RecentOK      = "ok"      // its result came back without an error
	RecentError   = "error"   // its result came back as an error
)

// RecentCall is one call of session.recent in a SessionState.
type RecentCall struct {
	// Seq numbers the session's calls from 1, in the order they were
	// decided before they ran (a call seen only after it ran gets the
	// next number then).
	Seq    uint64 `json:"seq"`
	Turn   uint64 `json:"turn"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool"`
	// Verdict, RuleID and Code are the decision before the call ran.
	Verdict string `json:"verdict"`
	RuleID  string `json:"rule,omitempty"`
	Code    string `json:"code,omitempty"`
	// Digest is the first 16 hex digits of the SHA-256 of the arguments'
	// canonical JSON: equal arguments, equal digests.
	Digest string `json:"digest"`
	// Summary is the command, path, URL or query the call names, cut at
	// 128 bytes, with secrets redacted.
	Summary string `json:"summary,omitempty"`
	// IDs are the call's id-like scalar arguments (id, *_id, *Id,
	// number, *_number), as strings.
	IDs    map[string]string `json:"ids,omitempty"`
	Status string            `json:"status"`
}

// summaryKeys are the arguments a summary is taken from, in order.
var summaryKeys = []string{"command", "cmd", "file_path", "absolute_path", "path", "notebook_path", "url",
	"uri", "query", "pattern", "sql", "prompt"}

// recentOf is the entry of call as decided by d before it ran.
func recentOf(call Call, d Decision, seq, turn uint64) RecentCall {
	return recentWith(call, d, seq, turn, argsDigest(call.Args))
}

// recentWith is recentOf with the arguments' digest already made.
func recentWith(call Call, d Decision, seq, turn uint64, digest string) RecentCall {
	r := RecentCall{Seq: seq, Turn: turn, CallID: clip(call.ID, maxRecentName), Tool: clip(call.Tool, maxRecentName),
		Verdict: d.Verdict.String(), RuleID: clip(d.RuleID, maxRecentName), Code: d.Code, Digest: digest}
	for _, k := range summaryKeys {
		if v, ok := call.Args[k].(string); ok && v != "" {
			r.Summary = clip(stdlib.RedactSecrets(v), maxRecentSummary)
			break
		}
	}
	keys := make([]string, 0, len(call.Args))
	for k := range call.Args {
		if idLike(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(r.IDs) == maxRecentIDs {
			break
		}
		var v string
		switch x := call.Args[k].(type) {
		case string:
			v = x
		case float64, int, int64, uint64, bool:
			v = fmt.Sprint(x)
		default:
			continue
		}
		if r.IDs == nil {
			r.IDs = map[string]string{}
		}
		r.IDs[clip(k, maxRecentName)] = clip(stdlib.RedactSecrets(v), maxRecentIDValue)
	}
	switch {
	case d.Verdict == policy.Ask:
		r.Status = RecentAsked
	case d.Verdict.Strictness() >= policy.Block.Strictness():
		r.Status = RecentRefused
	default:
		r.Status = RecentPending
	}
	return r
}

// idLike says whether an argument's name names an id.
func idLike(k string) bool {
	// Every name it accepts ends in d, D, r, R, y or Y, and no other last
	// rune lower-cases to d, r or y: most names are refused without
	// lower-casing them (TestIDLikeDifferential, FuzzIDLike).
	if k == "" {
		return false
	}
	switch k[len(k)-1] {
	case 'd', 'D', 'r', 'R', 'y', 'Y':
	default:
		return false
	}
	l := strings.ToLower(k)
	return l == "id" || l == "number" || strings.HasSuffix(l, "_id") || strings.HasSuffix(k, "Id") ||
		strings.HasSuffix(k, "ID") || strings.HasSuffix(l, "_number") || strings.HasSuffix(l, "_key")
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// noteRecent records a decision in the recent calls: before a call, a new
// entry; after it, the status of its entry (the one of the same call id,
// else the latest of the same tool and arguments still waiting for a
// result), or a new entry when none waits. It reports whether the facts
// changed. The caller holds s.mu.
func (f *sessionFacts) noteRecent(phase policy.Phase, call Call, res *Result, d Decision, turn uint64) bool {
	switch phase {
	case policy.PhaseBefore:
		f.seq++
		f.pushRecent(recentOf(call, d, f.seq, turn))
		return true
	case policy.PhaseAfter:
		status := RecentOK
		if res != nil && res.IsError {
			status = RecentError
		}
		// The digest is made once: to find the call's entry when it has no
		// id, and for a new entry when none waits.
		var digest string
		digested := false
		if call.ID == "" {
			digest, digested = argsDigest(call.Args), true
		}
		for i := len(f.recent) - 1; i >= 0; i-- {
			r := &f.recent[i]
			waiting := r.Status == RecentPending || r.Status == RecentAsked
			if call.ID != "" && r.CallID == clip(call.ID, maxRecentName) ||
				call.ID == "" && waiting && r.Tool == clip(call.Tool, maxRecentName) && r.Digest == digest {
				r.Status = status
				if i < len(f.recentVals) {
					f.recentVals[i] = nil // made again when next read
				}
				if i < len(f.recentEnc) {
					f.recentEnc[i].ok = false // encoded again when next committed
				}
				return true
			}
		}
		f.seq++
		if !digested {
			digest = argsDigest(call.Args)
		}
		r := recentWith(call, Decision{Verdict: policy.Allow}, f.seq, turn, digest)
		r.Verdict, r.Status = "", status
		f.pushRecent(r)
		return true
	}
	return false
}

// noteCall records the decision of a call, before or after it ran, in
// session.recent.
func (s *Session) noteCall(phase policy.Phase, call Call, res *Result, d Decision) {
	if phase != policy.PhaseBefore && phase != policy.PhaseAfter {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.facts.noteRecent(phase, call, res, d, s.turn) {
		s.view = nil
	}
}

// pushRecent appends r, dropping the oldest past MaxRecent.
func (f *sessionFacts) pushRecent(r RecentCall) {
	// The encodings follow the calls while they are as many; otherwise
	// they are all made again (recentEncodings).
	enc := len(f.recentEnc) == len(f.recent)
	var spare []byte
	if len(f.recent) >= MaxRecent {
		drop := len(f.recent) - MaxRecent + 1
		copy(f.recent, f.recent[drop:])
		f.recent = f.recent[:MaxRecent-1]
		if len(f.recentVals) >= MaxRecent {
			copy(f.recentVals, f.recentVals[len(f.recentVals)-MaxRecent+1:])
			f.recentVals = f.recentVals[:MaxRecent-1]
		}
		if enc {
			// The oldest call's encoding leaves; its array, which
			// nothing else holds, serves the new call's.
			spare = f.recentEnc[0].js[:0]
			copy(f.recentEnc, f.recentEnc[drop:])
			f.recentEnc = f.recentEnc[:MaxRecent-1]
		}
	}
	f.recent = append(f.recent, r)
	if len(f.recentVals) == len(f.recent)-1 {
		f.recentVals = append(f.recentVals, nil) // made when first read
	} else {
		f.recentVals = nil
	}
	if enc {
		f.recentEnc = append(f.recentEnc, recentEncoding{js: spare}) // made when first encoded
	} else {
		f.recentEnc = f.recentEnc[:0]
	}
}

// restoreRecent takes the recent calls of a stored state, keeping the
// last MaxRecent.
func (f *sessionFacts) restoreRecent(rs []RecentCall, seq uint64) {
	if len(rs) > MaxRecent {
		rs = rs[len(rs)-MaxRecent:]
	}
	f.recent = append([]RecentCall(nil), rs...)
	f.recentVals = nil
	f.recentEnc = nil
	f.seq = seq
	for _, r := range f.recent {
		f.seq = max(f.seq, r.Seq)
	}
}

// recentValue is session.recent: a list of maps, oldest first. Each
// entry's map is made when first read (recentVals, nil until then) and
// again only after its status changes, so a decision does not rebuild the
// list, and a set that never reads session.recent never makes one.
func (f *sessionFacts) recentValue() []any {
	if len(f.recentVals) != len(f.recent) {
		f.recentVals = make([]any, len(f.recent))
	}
	for i, v := range f.recentVals {
		if v == nil {
			f.recentVals[i] = f.recent[i].value()
		}
	}
	return slices.Clone(f.recentVals)
}

// value is a recent call as CEL reads it.
func (r RecentCall) value() map[string]any {
	ids := make(map[string]any, len(r.IDs))
	for k, v := range r.IDs {
		ids[k] = v
	}
	return map[string]any{"seq": int64(r.Seq), "turn": int64(r.Turn), "call": r.CallID, "tool": r.Tool,
		"verdict": r.Verdict, "rule": r.RuleID, "code": r.Code, "digest": r.Digest, "summary": r.Summary,
		"ids": ids, "status": r.Status}
}

// recentDecoded remembers recent calls decoded from their JSON, by the
// exact bytes (RecentCall.UnmarshalJSON). A process that resumes a
// session at each of its events (the decision daemon, a store's replicas)
// decodes its state each time, and all but the newest of its recent calls
// are the ones it decoded the time before: decoding them again was most of
// decoding the state. Bounded; past the bound it is dropped and refilled.
var recentDecoded struct {
	mu sync.Mutex
	m  map[string]RecentCall
}

// Bounds of recentDecoded: entries, and the JSON of an entry it keeps.
const (
	maxRecentDecoded     = 4096
	maxRecentDecodedJSON = 1024
)

// recentJSON is RecentCall without its UnmarshalJSON.
type recentJSON RecentCall

// UnmarshalJSON implements json.Unmarshaler: the decoding of the standard
// library, remembered by the exact bytes for a call decoded into a zero
// RecentCall (a state's, as ResumeSession decodes it). The value remembered
// is the one those bytes decode to; each decoding gets its own IDs map.
func (r *RecentCall) UnmarshalJSON(data []byte) error {
	zero := r.zero()
	if zero && len(data) <= maxRecentDecodedJSON {
		recentDecoded.mu.Lock()
		v, ok := recentDecoded.m[string(data)]
		recentDecoded.mu.Unlock()
		if ok {
			*r = v
			r.IDs = maps.Clone(v.IDs)
			return nil
		}
	}
	if err := json.Unmarshal(data, (*recentJSON)(r)); err != nil {
		return err
	}
	if zero && len(data) <= maxRecentDecodedJSON {
		v := *r
		v.IDs = maps.Clone(r.IDs)
		recentDecoded.mu.Lock()
		if recentDecoded.m == nil || len(recentDecoded.m) >= maxRecentDecoded {
			recentDecoded.m = map[string]RecentCall{}
		}
		recentDecoded.m[string(data)] = v
		recentDecoded.mu.Unlock()
	}
	return nil
}

// zero reports whether r is RecentCall{}.
func (r *RecentCall) zero() bool {
	return r.Seq == 0 && r.Turn == 0 && r.CallID == "" && r.Tool == "" && r.Verdict == "" && r.RuleID == "" &&
		r.Code == "" && r.Digest == "" && r.Summary == "" && r.IDs == nil && r.Status == ""
}
