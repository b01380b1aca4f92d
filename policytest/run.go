package policytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/policy"
)

// Epoch is the time the test clock starts at.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options configure a run.
type Options struct {
	// Run, when set, keeps only the cases whose "suite/case" name matches.
	Run *regexp.Regexp
	// Compile are extra options for compiling each suite's policies.
	Compile []compile.Option
	// Check, when set, compiles each suite's policies instead of
	// compile.Check, with Compile's options (a test deciding with sets
	// compiled another way: replayed from a compiled-set cache).
	Check func(srcs []policy.Source, opts ...compile.Option) (*compile.PolicySet, policy.Diagnostics, error)
	// Extra are sources added to every suite's policies, such as the
	// built-in tool classes.
	Extra []policy.Source
	// Layer is the layer of each suite's own policies (default: the
	// built-in layer, policy.Layer's zero). A runner whose Extra sources
	// are layered sets it above them, so that the policies under test win
	// collisions with them.
	Layer policy.Layer
	// Untrusted marks the suite's own policies (those in Layer) as an
	// untrusted project's, which can only restrict (docs/layers.md).
	Untrusted bool
	// Load, when set, supplies the policies of a suite that names none
	// (default: every policy file in the suite's directory).
	Load func(fsys fs.FS, suiteFile string) ([]policy.Source, error)
}

// Report is the result of a run.
type Report struct {
	Suites []SuiteResult `json:"suites"`
	Passed int           `json:"passed"`
	Failed int           `json:"failed"`
}

// OK reports whether every case passed.
func (r *Report) OK() bool { return r.Failed == 0 }

// SuiteResult is one suite's outcome.
type SuiteResult struct {
	File  string       `json:"file"`
	Name  string       `json:"name"`
	Cases []CaseResult `json:"cases"`
	// Error is set when the suite could not run at all (unreadable, its
	// policies did not compile, it is malformed).
	Error string `json:"error,omitempty"`
	// Diagnostics are the problems of a malformed suite (ParseSuite's),
	// each at its position with a code; Error lists them too.
	Diagnostics policy.Diagnostics `json:"diagnostics,omitempty"`
	// Rules lists every rule of the suite's policies, for coverage: its
	// id, policy and file (Line and Col are left zero, so not written).
	Rules []compile.RuleRef `json:"rules,omitempty"`
	// Fired counts, per rule id, the decisions each rule made or shaped.
	Fired map[string]int `json:"fired,omitempty"`
}

// CaseResult is one case's outcome.
type CaseResult struct {
	Name     string   `json:"name"`
	Line     int      `json:"line"`
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
	// Mismatches hold the expected and actual decisions of failing steps.
	Mismatches []Mismatch    `json:"mismatches,omitempty"`
	Duration   time.Duration `json:"duration_ns"`
}

// Mismatch is a step whose decision differed from what was expected.
type Mismatch struct {
	Step     int    `json:"step"`
	Expected Expect `json:"expected"`
	// Actual is the decision the step got, with its Trace (the rules tried
	// and what came of each).
	Actual eval.Decision `json:"actual"`
}

// RunFS finds every *_test.yaml below root in fsys and runs it.
func RunFS(ctx context.Context, fsys fs.FS, root string, opts Options) (*Report, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if !d.IsDir() && policy.IsTestFile(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	rep := &Report{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var sr SuiteResult
		s, err := ParseSuite(f, data)
		if err != nil {
			sr = Malformed(f, err)
		} else {
			sr = RunSuite(ctx, fsys, s, opts)
		}
		rep.add(sr)
	}
	return rep, nil
}

// Malformed is the result of a suite ParseSuite rejected with err.
func Malformed(file string, err error) SuiteResult {
	sr := SuiteResult{File: file, Name: file, Error: err.Error()}
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		sr.Diagnostics = ds
	}
	return sr
}

// Malformed reports whether a suite could not be read: ParseSuite
// rejected it.
func (r *Report) Malformed() bool {
	for _, s := range r.Suites {
		if len(s.Diagnostics) > 0 {
			return true
		}
	}
	return false
}

func (r *Report) add(sr SuiteResult) {
	r.Suites = append(r.Suites, sr)
	if sr.Error != "" {
		r.Failed++
	}
	for _, c := range sr.Cases {
		if c.Pass {
			r.Passed++
		} else {
			r.Failed++
		}
	}
}

// loadPolicies returns the sources a suite tests: its own policies, in
// opts.Layer (and opts.Untrusted) unless an inline file gives its own layer,
// and those its builtin:NAME entries name, in the built-in
// layer.
func loadPolicies(fsys fs.FS, s *Suite, opts Options) ([]policy.Source, error) {
	own, builtin, err := suitePolicies(fsys, s, opts)
	for i := range own {
		if !s.Policies.Layered[own[i].Name] {
			own[i].Layer, own[i].Untrusted = opts.Layer, opts.Untrusted
		}
	}
	return append(own, builtin...), err
}

// suitePolicies returns the suite's own policies and the sources of its
// builtin:NAME entries.
func suitePolicies(fsys fs.FS, s *Suite, opts Options) (own, builtin []policy.Source, err error) {
	if len(s.Policies.Inline) > 0 {
		return slices.Clone(s.Policies.Inline), nil, nil
	}
	dir := path.Dir(s.File)
	if len(s.Policies.Paths) > 0 {
		for _, p := range s.Policies.Paths {
			if name, ok := builtinName(p); ok {
				srcs, err := builtinSources(name)
				if err != nil {
					return nil, nil, err
				}
				builtin = append(builtin, srcs...)
				continue
			}
			srcs, err := readEntry(fsys, path.Join(dir, p))
			if err != nil {
				return nil, nil, err
			}
			own = append(own, srcs...)
		}
		return own, builtin, nil
	}
	if opts.Load != nil {
		own, err := opts.Load(fsys, s.File)
		return slices.Clone(own), nil, err
	}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !policy.IsPolicyFile(e.Name()) {
			continue
		}
		full := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, full)
		if err != nil {
			return nil, nil, err
		}
		own = append(own, policy.Source{Name: full, Data: data})
	}
	if len(own) == 0 {
		return nil, nil, fmt.Errorf("no policy files next to %s", s.File)
	}
	return own, nil, nil
}

// readEntry reads a policies entry that is a path: a policy file, or a
// directory of them (walked as policy.LoadFS walks one).
func readEntry(fsys fs.FS, name string) ([]policy.Source, error) {
	// BitCode guard files and directories are read natively, as the
	// layers read them (docs/import.md).
	if st, err := fs.Stat(fsys, name); err == nil && (st.IsDir() && importer.IsGuardDir(name) || !st.IsDir() && importer.IsGuardFile(name)) {
		var files []importer.File
		if st.IsDir() {
			if files, err = importer.ReadGuardDir(fsys, name, name); err != nil {
				return nil, err
			}
		} else {
			data, err := fs.ReadFile(fsys, name)
			if err != nil {
				return nil, err
			}
			files = []importer.File{{Name: name, Data: data}}
		}
		srcs, _, err := importer.GuardSources(files)
		if err == nil && len(srcs) == 0 {
			err = fmt.Errorf("no BitCode guard with patterns in %s", name)
		}
		return srcs, err
	}
	if st, err := fs.Stat(fsys, name); err != nil || !st.IsDir() {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		return []policy.Source{{Name: name, Data: data}}, nil
	}
	srcs, err := policy.LoadFS(fsys, name, "")
	if err == nil && len(srcs) == 0 {
		err = fmt.Errorf("no policy files in %s", name)
	}
	return srcs, err
}

// RunSuite runs every case of a suite. Policies named by path are read from
// fsys relative to the suite's directory.
func RunSuite(ctx context.Context, fsys fs.FS, s *Suite, opts Options) SuiteResult {
	sr := SuiteResult{File: s.File, Name: s.Name, Fired: map[string]int{}}
	srcs, err := loadPolicies(fsys, s, opts)
	if err != nil {
		sr.Error = err.Error()
		return sr
	}
	srcs = dedupe(append(srcs, opts.Extra...))
	check := compile.Check
	if opts.Check != nil {
		check = opts.Check
	}
	set, ds, err := check(srcs, opts.Compile...)
	if err != nil {
		sr.Error = err.Error()
		return sr
	}
	if set != nil {
		for _, r := range set.Rules() {
			sr.Rules = append(sr.Rules, compile.RuleRef{RuleID: r.ID, Policy: r.Policy.Name, File: r.Policy.File})
		}
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		if opts.Run != nil && !opts.Run.MatchString(s.Name+"/"+c.Name) {
			continue
		}
		start := time.Now()
		var cr CaseResult
		switch {
		case len(c.WantErrors) > 0:
			cr = checkErrors(c, ds)
		case set == nil:
			cr = CaseResult{Name: c.Name, Line: c.Line, Failures: []string{"policies do not compile:\n" + ds.Errors().Error()}}
		default:
			cr = runCase(ctx, set, s, c, sr.Fired)
			cr.Failures = append(checkWarnings(c, ds), cr.Failures...)
			cr.Pass = len(cr.Failures) == 0
		}
		cr.Duration = time.Since(start)
		sr.Cases = append(sr.Cases, cr)
	}
	return sr
}

func checkErrors(c *Case, ds policy.Diagnostics) CaseResult {
	cr := CaseResult{Name: c.Name, Line: c.Line}
	var got []string
	for _, d := range ds.Errors() {
		got = append(got, string(d.Code))
	}
	want := slices.Clone(c.WantErrors)
	slices.Sort(got)
	slices.Sort(want)
	got = slices.Compact(got)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		cr.Failures = append(cr.Failures, fmt.Sprintf("compile errors: got codes %v, want %v\n%s", got, want, ds.Error()))
	}
	cr.Pass = len(cr.Failures) == 0
	return cr
}

// checkWarnings lists the codes of c.WantWarnings the compile did not
// report.
func checkWarnings(c *Case, ds policy.Diagnostics) []string {
	var fails []string
	for _, want := range c.WantWarnings {
		if !slices.ContainsFunc(ds, func(d policy.Diagnostic) bool { return string(d.Code) == want }) {
			fails = append(fails, fmt.Sprintf("compile warnings: no %s among\n%s", want, ds.Error()))
		}
	}
	return fails
}

// scripted answers ask verdicts from a case's script.
type scripted struct {
	mu      sync.Mutex
	answers []string
}

func (s *scripted) Approve(_ context.Context, req eval.ApprovalRequest) (eval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) == 0 {
		return eval.Approval{}, errors.New("the approver was asked more often than the case scripted")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	ans, rem, err := parseAnswer(a)
	return eval.Approval{Answer: ans, Remember: rem}, err
}

func runCase(ctx context.Context, set *compile.PolicySet, s *Suite, c *Case, fired map[string]int) CaseResult {
	cr := CaseResult{Name: c.Name, Line: c.Line}
	now := Epoch
	opts := []eval.Option{eval.WithClock(func() time.Time { return now })}
	if c.Approver != nil {
		opts = append(opts, eval.WithApprover(&scripted{answers: slices.Clone(c.Approver)}))
	}
	if s.Monitor {
		opts = append(opts, eval.WithMonitor())
	}
	eng, err := eval.New(set, opts...)
	if err != nil {
		cr.Failures = append(cr.Failures, err.Error())
		return cr
	}
	meta := map[string]any{}
	for k, v := range s.Session {
		meta[k] = v
	}
	for k, v := range c.Session {
		meta[k] = v
	}
	sess := eng.NewSession("test", meta)
	for i, st := range c.Steps {
		step := i + 1
		switch {
		case st.Turn:
			sess.StartTurn()
			continue
		case st.Advance != "":
			d, _ := time.ParseDuration(st.Advance)
			now = now.Add(d)
			continue
		}
		var d eval.Decision
		var err error
		// A checked step is traced, so a mismatch can show the rules tried.
		var copts []eval.CallOption
		if st.Expect != nil {
			copts = append(copts, eval.WithTrace())
		}
		for n := 0; n < max(1, st.Repeat); n++ {
			if st.TurnEnd {
				d, err = sess.EndTurn(ctx, copts...)
			} else if st.Input != nil {
				d, err = sess.Input(ctx, st.Input.Input(), copts...)
			} else if st.Output != nil {
				d, err = sess.Output(ctx, st.Output.Output(), copts...)
			} else if st.Tools != nil {
				d, err = sess.Tools(ctx, st.Tools.Definition(), copts...)
			} else if st.Resource != nil {
				d, err = sess.Resource(ctx, st.Resource.Resource(), copts...)
			} else if st.Before != nil {
				d, err = sess.Before(ctx, normalize(st.Before.Call()), copts...)
			} else {
				res, _ := resultOf(st.Result)
				d, err = sess.After(ctx, normalize(st.After.Call()), res, copts...)
			}
			if d.RuleID != "" {
				fired[d.RuleID]++
			}
			for _, m := range d.Modified {
				if m != d.RuleID {
					fired[m]++
				}
			}
		}
		if err != nil {
			cr.Failures = append(cr.Failures, fmt.Sprintf("step %d: error: %v", step, err))
		}
		if st.Expect == nil {
			continue
		}
		if diffs := compare(*st.Expect, d); len(diffs) > 0 {
			cr.Failures = append(cr.Failures, fmt.Sprintf("step %d: %s", step, strings.Join(diffs, "; ")))
			cr.Mismatches = append(cr.Mismatches, Mismatch{Step: step, Expected: *st.Expect, Actual: d})
		}
	}
	cr.Pass = len(cr.Failures) == 0
	return cr
}

// normalize passes the arguments through JSON, as a host's would arrive.
func normalize(c eval.Call) eval.Call {
	c.Args = jsonValue(c.Args).(map[string]any)
	return c
}

func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	if out == nil {
		if _, isMap := v.(map[string]any); isMap {
			return map[string]any{}
		}
	}
	return out
}

// compare lists how a decision differs from the expectation.
func compare(e Expect, d eval.Decision) []string {
	var diffs []string
	if e.Verdict != "" && e.Verdict != d.Verdict.String() {
		diffs = append(diffs, fmt.Sprintf("verdict: got %s, want %s", d.Verdict, e.Verdict))
	}
	if e.Rule != nil {
		want := *e.Rule
		if want == "none" {
			want = ""
		}
		if want != d.RuleID {
			diffs = append(diffs, fmt.Sprintf("rule: got %q, want %q", d.RuleID, want))
		}
	}
	if e.Code != nil && *e.Code != d.Code {
		diffs = append(diffs, fmt.Sprintf("code: got %q, want %q", d.Code, *e.Code))
	}
	if e.Reason != nil && *e.Reason != d.Reason {
		diffs = append(diffs, fmt.Sprintf("reason: got %q, want %q", d.Reason, *e.Reason))
	}
	if e.ReasonContains != "" && !strings.Contains(d.Reason, e.ReasonContains) {
		diffs = append(diffs, fmt.Sprintf("reason: got %q, want it to contain %q", d.Reason, e.ReasonContains))
	}
	if e.Args != nil && !reflect.DeepEqual(jsonValue(e.Args), jsonValue(d.Args)) {
		got, _ := json.Marshal(d.Args)
		want, _ := json.Marshal(e.Args)
		diffs = append(diffs, fmt.Sprintf("args: got %s, want %s", got, want))
	}
	if e.Content != nil {
		if d.Content == nil {
			diffs = append(diffs, fmt.Sprintf("content: got none, want %q", *e.Content))
		} else if *d.Content != *e.Content {
			diffs = append(diffs, fmt.Sprintf("content: got %q, want %q", *d.Content, *e.Content))
		}
	}
	if e.ContentContains != "" && (d.Content == nil || !strings.Contains(*d.Content, e.ContentContains)) {
		got := "none"
		if d.Content != nil {
			got = strconv.Quote(*d.Content)
		}
		diffs = append(diffs, fmt.Sprintf("content: got %s, want it to contain %q", got, e.ContentContains))
	}
	if e.ModifiedBy != nil && !slices.Equal(e.ModifiedBy, d.Modified) {
		diffs = append(diffs, fmt.Sprintf("modified_by: got %v, want %v", d.Modified, e.ModifiedBy))
	}
	if e.Untrusted != nil && *e.Untrusted != d.Untrusted {
		diffs = append(diffs, fmt.Sprintf("untrusted: got %v, want %v", d.Untrusted, *e.Untrusted))
	}
	if e.Metadata != nil && !maps.Equal(e.Metadata, d.Metadata) {
		diffs = append(diffs, fmt.Sprintf("metadata: got %s, want %s", jsonText(d.Metadata), jsonText(e.Metadata)))
	}
	if e.Messages != nil {
		got := make([]MessageSpec, len(d.Messages))
		for i, m := range d.Messages {
			got[i] = MessageSpec(m)
		}
		if !slices.Equal(got, e.Messages) {
			diffs = append(diffs, fmt.Sprintf("messages: got %s, want %s", jsonText(got), jsonText(e.Messages)))
		}
	}
	if e.Output != nil {
		var got map[string]any
		if d.Output != nil {
			got = map[string]any{"text": d.Output.Text}
			if _, ok := e.Output["content"]; ok {
				got["content"] = d.Output.Content
			}
		}
		if !reflect.DeepEqual(jsonValue(got), jsonValue(e.Output)) {
			diffs = append(diffs, fmt.Sprintf("output: got %s, want %s", jsonText(d.Output), jsonText(e.Output)))
		}
	}
	if e.Description != nil {
		got := "(none)"
		if d.Description != nil {
			got = *d.Description
		}
		if got != *e.Description {
			diffs = append(diffs, fmt.Sprintf("description: got %q, want %q", got, *e.Description))
		}
	}
	if e.Monitored != nil {
		got, gotVerdict, gotCode := "none", "", ""
		if m := d.Monitored; m != nil {
			got, gotVerdict, gotCode = m.RuleID, m.Verdict.String(), m.Code
		}
		switch {
		case got != e.Monitored.Rule:
			diffs = append(diffs, fmt.Sprintf("monitored: got rule %q, want %q", got, e.Monitored.Rule))
		case e.Monitored.Verdict != "" && gotVerdict != e.Monitored.Verdict:
			diffs = append(diffs, fmt.Sprintf("monitored: got verdict %s, want %s", gotVerdict, e.Monitored.Verdict))
		case e.Monitored.Code != nil && gotCode != *e.Monitored.Code:
			diffs = append(diffs, fmt.Sprintf("monitored: got code %q, want %q", gotCode, *e.Monitored.Code))
		}
	}
	if e.Approval != "" {
		got := ""
		if d.Approval != nil {
			got = string(d.Approval.Outcome)
		}
		if got != e.Approval {
			diffs = append(diffs, fmt.Sprintf("approval: got %q, want %q", got, e.Approval))
		}
	}
	return diffs
}
