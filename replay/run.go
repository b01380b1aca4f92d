package replay

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/mask"
	"github.com/celguard/celguard/policy"
)

// Options change how Run reads the records.
type Options struct {
	// Format reads every file in this format; "" detects each file's
	// format from its first record.
	Format Format
	// Progress, when set, is called as the replay goes: after every
	// ProgressEvery events and at the end of every file.
	Progress func(Progress)
}

// ProgressEvery is how many events go between two Progress calls.
const ProgressEvery = 4096

// Progress is how far a replay has gone.
type Progress struct {
	// Files is the number of files read, of TotalFiles.
	Files, TotalFiles int
	// Calls is the number of calls decided.
	Calls int
	// Flips is the number of decisions that differ: from what the host
	// did (Run: a call it ran that the policy refuses) or between two
	// policy sets (Diff).
	Flips int
}

// Files expands paths into the record files they name, in order: a file
// as given, a directory as every *.jsonl file under it, sorted (a Claude
// Code projects directory, a Codex sessions directory, a directory of
// decision logs).
func Files(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// Report is what a replay found: counts, and every call the policies
// would refuse. Its JSON is docs/schema/replay.schema.json; the same
// records and policies give the same bytes.
type Report struct {
	// PolicyDigest identifies the policy set (compile.PolicySet.Digest);
	// empty for a monitor report.
	PolicyDigest string `json:"policy_digest,omitempty"`
	// Monitor says the report is of a monitor-mode decision log
	// (MonitorReport): what the monitored rules would have decided.
	Monitor bool `json:"monitor,omitempty"`
	// Files, Sessions and Events count what was read; Calls the calls
	// decided before they ran.
	Files    int `json:"files"`
	Sessions int `json:"sessions"`
	Events   int `json:"events"`
	Calls    int `json:"calls"`
	// Verdicts counts the calls' decisions (before they ran) by verdict.
	Verdicts map[string]int `json:"verdicts"`
	// Phases counts every decision by phase, then verdict.
	Phases map[string]map[string]int `json:"phases"`
	// Hosts counts the calls' decisions by host, then verdict; a record
	// that names no host counts as "unknown".
	Hosts map[string]map[string]int `json:"hosts"`
	// Rules counts the decisions each rule made, by verdict, sorted by
	// policy and rule id; the default verdict is not a rule.
	Rules []RuleCount `json:"rules"`
	// Refused lists, in record order, every call the policies would
	// block, ask about or halt (before it ran, or its result after).
	Refused []Finding `json:"refused"`
	// RanRefused lists the refused calls the host ran: the record holds
	// their result, or celguard's decision log allowed them.
	RanRefused []Finding `json:"ran_refused"`
	// Errors are the records that could not be read (each skipped, the
	// rest of its file read) and the engine's errors.
	Errors []*Error `json:"errors"`
}

// RuleCount is the decisions one rule made.
type RuleCount struct {
	compile.RuleRef
	Total    int            `json:"total"`
	Verdicts map[string]int `json:"verdicts"`
}

// Finding is one call a report names: where it was recorded, the call as
// the decision log would show it (masked), and what decided it.
type Finding struct {
	// Record is the file and line of the record.
	Record  Pos          `json:"record"`
	Host    string       `json:"host,omitempty"`
	Session string       `json:"session_id,omitempty"`
	CallID  string       `json:"call_id,omitempty"`
	Phase   policy.Phase `json:"phase"`
	Tool    string       `json:"tool"`
	// Args are the call's arguments, masked as the decision log masks
	// them; Masked lists the paths masked.
	Args   map[string]any `json:"args,omitempty"`
	Masked []mask.Path    `json:"masked,omitempty"`
	// Verdict, the rule, Code and Reason are the decision (masked).
	Verdict policy.Verdict `json:"verdict"`
	compile.RuleRef
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Live is the verdict celguard's decision log recorded for the call,
	// when the record is one.
	Live string `json:"live_verdict,omitempty"`
	// Ran says the host ran the call.
	Ran bool `json:"ran"`
}

// refusal reports whether a decision refuses its call: block, ask or
// halt (an after decision refusing a call refused before it ran is not
// counted twice).
func refusal(d eval.Decision) bool {
	switch d.Verdict {
	case policy.Block, policy.Ask, policy.Halt:
		return d.Code != eval.CodeCallRefused
	}
	return false
}

// tally builds a Report from decided events.
type tally struct {
	r        *Report
	rules    map[compile.RuleRef]*RuleCount
	sessions map[string]bool
	// open are the refused calls before they ran, by session and call
	// id, pointing into r.Refused.
	open     map[[2]string]int
	progress func(Progress)
	p        Progress
}

func newTally(progress func(Progress)) *tally {
	return &tally{r: &Report{Verdicts: map[string]int{}, Phases: map[string]map[string]int{}, Hosts: map[string]map[string]int{}, Refused: []Finding{}, RanRefused: []Finding{}, Errors: []*Error{}},
		rules: map[compile.RuleRef]*RuleCount{}, sessions: map[string]bool{}, open: map[[2]string]int{}, progress: progress}
}

func bump(m map[string]map[string]int, k, v string) {
	if m[k] == nil {
		m[k] = map[string]int{}
	}
	m[k][v]++
}

// add counts one event: d is its decision, nil when it was not decided;
// record is the decision as the decision log would write it (masked),
// made only for a call the report names.
func (t *tally) add(file string, ev Event, d *eval.Decision, record func() *decisionlog.Record) {
	t.r.Events++
	t.sessions[file+"\x00"+ev.Session] = true
	key := [2]string{file + "\x00" + ev.Session, ev.Call.ID}
	if ev.Kind == After && ev.NotRun == "" && ev.Call.ID != "" {
		if i, ok := t.open[key]; ok {
			t.ran(i)
		}
	}
	if d == nil {
		return
	}
	verdict := d.Verdict.String()
	bump(t.r.Phases, d.Phase.String(), verdict)
	if d.RuleID != "" {
		rc := t.rules[d.RuleRef]
		if rc == nil {
			rc = &RuleCount{RuleRef: d.RuleRef, Verdicts: map[string]int{}}
			t.rules[d.RuleRef] = rc
		}
		rc.Total++
		rc.Verdicts[verdict]++
	}
	if d.Phase == policy.PhaseBefore {
		t.r.Calls++
		t.p.Calls++
		t.r.Verdicts[verdict]++
		host := ev.Host
		if host == "" {
			host = "unknown"
		}
		bump(t.r.Hosts, host, verdict)
	}
	if !d.Phase.HasCall() || !refusal(*d) {
		return
	}
	rec := record()
	f := Finding{Record: ev.Pos, Host: ev.Host, Session: ev.Session, CallID: ev.Call.ID, Phase: rec.Phase, Tool: rec.Tool,
		Args: rec.Args, Masked: rec.Masked, Verdict: rec.Verdict, RuleRef: rec.RuleRef, Code: rec.Code, Reason: rec.Reason}
	t.r.Refused = append(t.r.Refused, f)
	i := len(t.r.Refused) - 1
	if ev.Live != nil {
		f.Live = ev.Live.Verdict.String()
		t.r.Refused[i].Live = f.Live
		if rec.Phase == policy.PhaseBefore && (eval.Decision{Verdict: ev.Live.Verdict}).Allowed() {
			t.ran(i)
		}
	}
	if rec.Phase == policy.PhaseBefore && ev.Call.ID != "" {
		t.open[key] = i
	}
}

// ran marks the refused call i as run by the host.
func (t *tally) ran(i int) {
	if !t.r.Refused[i].Ran {
		t.r.Refused[i].Ran = true
		t.p.Flips++
	}
}

func (t *tally) readError(e *Error) { t.r.Errors = append(t.r.Errors, e) }

func (t *tally) tick() {
	if t.progress != nil && t.r.Events%ProgressEvery == 0 {
		t.progress(t.p)
	}
}

func (t *tally) fileDone() {
	t.r.Files++
	t.p.Files++
	// Calls still open at the end of their file are forgotten.
	clear(t.open)
	if t.progress != nil {
		t.progress(t.p)
	}
}

// report finishes the report: sessions, rules sorted, the refused calls
// the host ran.
func (t *tally) report() *Report {
	t.r.Sessions = len(t.sessions)
	t.r.Rules = []RuleCount{}
	for _, rc := range t.rules {
		t.r.Rules = append(t.r.Rules, *rc)
	}
	slices.SortFunc(t.r.Rules, func(a, b RuleCount) int {
		if c := strings.Compare(a.Policy, b.Policy); c != 0 {
			return c
		}
		if c := strings.Compare(a.RuleID, b.RuleID); c != 0 {
			return c
		}
		return strings.Compare(a.File, b.File)
	})
	for _, f := range t.r.Refused {
		if f.Ran {
			t.r.RanRefused = append(t.r.RanRefused, f)
		}
	}
	return t.r
}

// Run replays the record files (Files expands directories) with eng and
// reports what it decided. A file that cannot be opened, or whose format
// is unknown, and every record that cannot be read is in Report.Errors;
// the other files and records are still replayed. The error is ctx's, or
// a file that failed while being read.
func Run(ctx context.Context, eng *Engine, paths []string, opts Options) (*Report, error) {
	files, err := Files(paths)
	if err != nil {
		return nil, err
	}
	t := newTally(opts.Progress)
	t.p.TotalFiles = len(files)
	t.r.PolicyDigest = eng.PolicySet().Digest()
	for _, path := range files {
		f, err := Open(path, opts.Format)
		if err != nil {
			if e, ok := err.(*Error); ok {
				t.readError(e)
				t.fileDone()
				continue
			}
			return nil, err
		}
		err = eng.Replay(ctx, f, func(o *Outcome) error {
			if o.ReadErr != nil {
				t.readError(o.ReadErr)
				return nil
			}
			if o.Err != nil {
				t.readError(&Error{Pos: o.Event.Pos, Code: CodeEngine, Msg: o.Err.Error()})
			}
			var d *eval.Decision
			if o.Decided {
				d = &o.Decision
			}
			t.add(path, o.Event, d, func() *decisionlog.Record { return eng.Record(o) })
			t.tick()
			return nil
		})
		f.Close()
		if err != nil {
			return nil, err
		}
		t.fileDone()
	}
	return t.report(), nil
}

// CodeEngine marks an event the engine could not decide (its decision is
// then the engine's fail-closed one).
const CodeEngine = "replay_engine_error"
