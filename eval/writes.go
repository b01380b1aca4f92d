package eval

import (
	"fmt"
	"sort"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// This file keeps the files a session wrote, the fact rules read as
// session.writes (docs/policies.md, "Session facts"): per path, how the
// last recorded write wrote it and whether its content was proven safe. A
// rule's writes expression (policy.Rule.Writes) names them; the engine
// evaluates the writes of every trusted rule that applies to a call before
// it runs, whichever rule decided it, and records them when the call is not
// refused:
//
//   - an unproven write (proven false) marks its path, whether the call
//     is let through or asked (approved or not: the engine cannot know);
//   - a proven write replaces the path's entry, clearing its mark, only
//     when the call is let through (allow, warn, modify), since a call
//     asked and refused does not write.
//
// At most MaxWrites paths are kept, the least recently written leaving
// first; a path that leaves with its mark set sets the session-wide
// unproven_writes_evicted fact for good (fail closed: the rule that reads
// the marks asks as if every file were marked). A writes expression that
// fails sets it too: what the call wrote is then unknown.

// MaxWrites bounds the paths session.writes keeps.
const MaxWrites = 48

// Bounds of a kept write, so that a session's state stays small (48
// writes of the longest kept paths weigh about 25 KiB in the hook state
// file): a longer path is not kept, and counts as evicted when unproven;
// the how, call id, tool and rule are cut.
const (
	maxWritePath = 256
	maxWriteHow  = 32
	maxWriteName = 64
)

// Names of the write facts in the session variable.
const (
	factWrites         = "writes"
	factUnprovenWrites = "unproven_writes"
	factWritesEvicted  = "unproven_writes_evicted"
)

// WriteFact is a file of session.writes in a SessionState: the path, how
// the last recorded write wrote it, whether its content was proven safe,
// and the call that wrote it.
type WriteFact struct {
	Path   string `json:"path"`
	How    string `json:"how,omitempty"`
	Proven bool   `json:"proven,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool"`
	Turn   uint64 `json:"turn"`
	Rule   string `json:"rule,omitempty"`
}

// value is the fact as rules read it.
func (w WriteFact) value() map[string]any {
	return map[string]any{"path": w.Path, "how": w.How, "proven": w.Proven, "call": w.CallID, "tool": w.Tool, "turn": int64(w.Turn), "rule": w.Rule}
}

// noteWrite records w, least recently written last out; it reports whether
// the facts changed. The caller holds s.mu.
func (f *sessionFacts) noteWrite(w WriteFact) bool {
	if w.Path == "" {
		return false
	}
	if len(w.Path) > maxWritePath {
		if !w.Proven && !f.writesEvicted {
			f.writesEvicted = true
			return true
		}
		return false
	}
	for i, old := range f.writes {
		if old.Path == w.Path {
			if old == w {
				return false
			}
			f.writes = append(f.writes[:i], f.writes[i+1:]...)
			break
		}
	}
	if len(f.writes) >= MaxWrites {
		if !f.writes[0].Proven {
			f.writesEvicted = true
		}
		f.writes = f.writes[1:]
	}
	f.writes = append(f.writes, w)
	f.writesVal = nil
	return true
}

// restoreWrites takes the writes of a state, within the bounds: entries
// past MaxWrites leave as they would have (oldest first).
func (f *sessionFacts) restoreWrites(writes []WriteFact, evicted bool) {
	f.writes, f.writesEvicted, f.writesVal = nil, evicted, nil
	for _, w := range writes {
		w.How, w.CallID, w.Tool, w.Rule = clip(w.How, maxWriteHow), clip(w.CallID, maxWriteName), clip(w.Tool, maxWriteName), clip(w.Rule, maxWriteName)
		f.noteWrite(w)
	}
}

// writesValue is session.writes, the files least recently written first,
// each a map with path, how, proven, call, tool, rule and turn, and
// session.unproven_writes, those of them whose content was not proven (a
// rule that looks for marks reads it without walking every file).
func (f *sessionFacts) writesValue() (all, unproven []any) {
	if f.writesVal == nil || len(f.writesVal) != len(f.writes) {
		f.writesVal, f.unprovenVal = make([]any, len(f.writes)), []any{}
		for i, w := range f.writes {
			f.writesVal[i] = w.value()
			if !w.Proven {
				f.unprovenVal = append(f.unprovenVal, f.writesVal[i])
			}
		}
	}
	return f.writesVal, f.unprovenVal
}

// noteWrites evaluates, for a call decided d before it ran, the writes
// expressions of the trusted rules that apply to it (their phase, tools and
// classes), whichever rule decided, and records what they name (see the
// top of this file). An untrusted project's rules are not read: a project
// cannot clear a mark.
func (ev *evaluation) noteWrites(d Decision) {
	if ev.phase != policy.PhaseBefore {
		return
	}
	lets := false
	switch d.Verdict {
	case policy.Allow, policy.Warn, policy.Modify:
		lets = true
	case policy.Ask:
	case policy.Block:
		if d.Code != CodeApprovalRequired && d.Code != CodeApprovalDenied && d.Code != CodeApprovalTimeout {
			return
		}
	default:
		return
	}
	all := ev.set.Writers()
	if len(all) == 0 {
		return
	}
	ev.toolClasses()
	var writers []*compile.Rule
	for _, r := range all {
		if r.AppliesTo(ev.call.Tool, ev.classes) {
			writers = append(writers, r)
		}
	}
	var facts []WriteFact
	failed := false
	for _, r := range writers {
		out, err := ev.eval(r.Policy, r.Writes)
		if err != nil {
			failed = true
			continue
		}
		ws, err := writesOf(out)
		if err != nil {
			failed = true
			continue
		}
		for _, w := range ws {
			w.CallID, w.Tool, w.Turn, w.Rule = clip(ev.call.ID, maxWriteName), clip(ev.call.Tool, maxWriteName), ev.s.turn, clip(r.ID, maxWriteName)
			facts = append(facts, w)
		}
	}
	s := ev.s
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	if failed && !s.facts.writesEvicted {
		s.facts.writesEvicted, changed = true, true
	}
	// Unproven entries first: a path named both ways in one call stays
	// marked.
	sort.SliceStable(facts, func(i, j int) bool { return facts[i].Proven && !facts[j].Proven })
	marked := map[string]bool{}
	for _, w := range facts {
		if w.Proven && (!lets || marked[w.Path]) {
			continue
		}
		if !w.Proven {
			marked[w.Path] = true
		}
		if s.facts.noteWrite(w) {
			changed = true
		}
	}
	if changed {
		s.view = nil
	}
}

// writesOf reads a writes expression's value: a list of maps with path (a
// string), how (a string, optional) and proven (a bool, optional: absent
// is false).
func writesOf(v ref.Val) ([]WriteFact, error) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("writes returned %s, not a list", v.Type())
	}
	var out []WriteFact
	for it := l.Iterator(); it.HasNext() == types.True; {
		m, ok := it.Next().(traits.Mapper)
		if !ok {
			return nil, fmt.Errorf("writes must list maps with path, how and proven")
		}
		var w WriteFact
		p, ok := m.Find(types.String("path"))
		if !ok {
			return nil, fmt.Errorf("a write without a path")
		}
		ps, ok := p.(types.String)
		if !ok {
			return nil, fmt.Errorf("a write's path must be a string")
		}
		w.Path = string(ps)
		if h, ok := m.Find(types.String("how")); ok {
			hs, ok := h.(types.String)
			if !ok {
				return nil, fmt.Errorf("a write's how must be a string")
			}
			w.How = clip(string(hs), maxWriteHow)
		}
		if b, ok := m.Find(types.String("proven")); ok {
			bv, ok := b.(types.Bool)
			if !ok {
				return nil, fmt.Errorf("a write's proven must be a bool")
			}
			w.Proven = bool(bv)
		}
		out = append(out, w)
	}
	return out, nil
}
