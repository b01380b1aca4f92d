package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/internal/logfile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// DecisionRecord is one decision as the decision log writes it: the
// decision's audit record and outcome, with the call's tool and arguments
// (or the model's messages or output) masked. docs/decision-log.md
// documents it and docs/schema/decision-log.schema.json is its JSON Schema.
//
// Masking: every argument a trusted policy's decision_log.mask names is
// replaced by "[MASKED]", and every credential the secret-redaction
// patterns find (stdlib.RedactSecrets) in what is left, in any string of
// the record, by "[REDACTED:<kind>]"; a masked value is also cut out of the
// reason and error, which rules may build from the arguments. Masked lists
// the paths masked, never their values.
type DecisionRecord struct {
	DecisionID   string       `json:"decision_id"`
	Time         time.Time    `json:"time"`
	PolicyDigest string       `json:"policy_digest"`
	SessionID    string       `json:"session_id"`
	Agent        Agent        `json:"agent,omitzero"`
	CallID       string       `json:"call_id,omitempty"`
	Phase        policy.Phase `json:"phase"`
	Tool         string       `json:"tool"`
	// Args are the call's arguments, masked.
	Args map[string]any `json:"args,omitempty"`
	// Messages and Output are the model's input or output, masked.
	Messages []Message    `json:"messages,omitempty"`
	Output   *ModelOutput `json:"output,omitempty"`

	Verdict  policy.Verdict    `json:"verdict"`
	RuleID   string            `json:"rule_id,omitempty"`
	Policy   string            `json:"policy,omitempty"`
	File     string            `json:"file,omitempty"`
	Line     int               `json:"line,omitempty"`
	Col      int               `json:"col,omitempty"`
	Code     string            `json:"code,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Modified and Rewrite are the modify rules applied and what they
	// rewrote (masked as the call is).
	Modified  []string        `json:"modified_by,omitempty"`
	Rewrite   *Rewrite        `json:"rewrite,omitempty"`
	Approval  *ApprovalRecord `json:"approval,omitempty"`
	Error     string          `json:"error,omitempty"`
	Untrusted bool            `json:"untrusted,omitempty"`
	// Monitored is the would-be decision of a monitored rule (monitor
	// mode), as in the Decision.
	Monitored *Monitored `json:"monitored,omitempty"`
	// Masked lists the paths masked (args.env.TOKEN, messages.0.content),
	// each with why: "policy" (a declared mask) or "secret".
	Masked []MaskedPath `json:"masked,omitempty"`
}

// Rewrite is what a modify decision rewrote, as the decision log writes
// it.
type Rewrite struct {
	Args     map[string]any `json:"args,omitempty"`
	Content  *string        `json:"content,omitempty"`
	Messages []Message      `json:"messages,omitempty"`
	Output   *ModelOutput   `json:"output,omitempty"`
}

// MaskedPath is one value the decision log masked.
type MaskedPath struct {
	Path string `json:"path"`
	// By is "policy" (a decision_log.mask entry) or "secret" (a credential
	// the secret patterns found).
	By string `json:"by"`
}

// DecisionSink receives every decision of an engine built with
// WithDecisionSink, as a record, once the decision is made. It is called
// from every session at once, so it must be safe for concurrent use. An
// error is never dropped: the engine hands it to the option's onError, or
// refuses the decision (decision_log_failed).
type DecisionSink interface {
	WriteDecision(ctx context.Context, rec *DecisionRecord) error
}

// CodeDecisionLogFailed is the code of a decision refused because the
// decision log could not record it (WithDecisionSink without onError).
const CodeDecisionLogFailed = "decision_log_failed"

// WithDecisionSink writes every decision to sink as a DecisionRecord, and
// implies WithDecisionMetadata (a record always has its id, time, digest
// and session). When the sink fails, onError is called with the error and
// the decision stands; with a nil onError the decision fails closed: it
// becomes a block with code decision_log_failed, and Before (After,
// EndTurn, Input, Output) returns the error with it. Records are written
// before the decision is returned, so a host never acts on a decision the
// log lacks.
func WithDecisionSink(sink DecisionSink, onError func(error)) Option {
	return func(c *config) error {
		if sink == nil {
			return errors.New("eval.WithDecisionSink: nil sink")
		}
		c.sink, c.sinkError = sink, onError
		if c.auditIDs == nil {
			c.auditIDs = randomID
		}
		return nil
	}
}

// logDecision writes d to the engine's sink, if any: the decision of event
// (call, and io in the input and output phases) by set.
func (s *Session) logDecision(ctx context.Context, set *compile.PolicySet, d Decision, call Call, io *modelIO) (Decision, error) {
	sink := s.eng.cfg.sink
	if sink == nil {
		return d, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rec := newDecisionRecord(set, d, call, io)
	err := sink.WriteDecision(ctx, rec)
	if err == nil {
		return d, nil
	}
	if s.eng.cfg.sinkError != nil {
		s.eng.cfg.sinkError(err)
		return d, nil
	}
	r := refusal(d.Phase, d.Tool, CodeDecisionLogFailed, "the decision could not be written to the decision log: "+err.Error(), nil)
	r.CallID, r.Agent, r.Error = d.CallID, d.Agent, err.Error()
	r.DecisionID, r.Time, r.PolicyDigest, r.SessionID = d.DecisionID, d.Time, d.PolicyDigest, d.SessionID
	return r, fmt.Errorf("eval: decision log: %w", err)
}

// The marks a masked value is replaced with.
const (
	maskedValue = "[MASKED]"
	// maxLoggedString bounds each string of a record (in bytes, cut on a
	// character boundary), so that a call with a huge argument does not
	// make a huge line.
	maxLoggedString = 4096
)

// newDecisionRecord is the record of decision d of call (and of the
// model's io, in the input and output phases; nil otherwise) by set,
// masked as DecisionRecord says.
func newDecisionRecord(set *compile.PolicySet, d Decision, call Call, io *modelIO) *DecisionRecord {
	rec := &DecisionRecord{
		DecisionID: d.DecisionID, Time: d.Time, PolicyDigest: d.PolicyDigest, SessionID: d.SessionID,
		Agent: d.Agent, CallID: d.CallID, Phase: d.Phase, Tool: d.Tool,
		Verdict: d.Verdict, RuleID: d.RuleID, Policy: d.Policy, File: d.File, Line: d.Line, Col: d.Col, Code: d.Code,
		Modified: slices.Clone(d.Modified), Untrusted: d.Untrusted, Approval: d.Approval,
	}
	m := &masker{}
	var masks [][]string
	if set != nil {
		masks = masksFor(set.LogMasks(), call.Tool)
	}
	if call.Args != nil && d.Phase.HasCall() {
		rec.Args = m.args("args", call.Args, masks)
	}
	if io != nil {
		rec.Messages = m.messages("messages", io.messages)
		rec.Output = m.output("output", io.output)
	}
	if d.Args != nil || d.Content != nil || d.Messages != nil || d.Output != nil {
		rw := &Rewrite{Messages: m.messages("rewrite.messages", d.Messages), Output: m.output("rewrite.output", d.Output)}
		if d.Args != nil {
			rw.Args = m.args("rewrite.args", d.Args, masks)
		}
		if d.Content != nil {
			c := m.text("rewrite.content", *d.Content)
			rw.Content = &c
		}
		rec.Rewrite = rw
	}
	rec.Reason = m.free(d.Reason)
	rec.Error = m.free(d.Error)
	if len(d.Metadata) > 0 {
		rec.Metadata = make(map[string]string, len(d.Metadata))
		for k, v := range d.Metadata {
			rec.Metadata[k] = m.free(v)
		}
	}
	if d.Monitored != nil {
		mo := *d.Monitored
		mo.Reason, mo.Error = m.free(mo.Reason), m.free(mo.Error)
		mo.Metadata = nil
		if len(d.Monitored.Metadata) > 0 {
			mo.Metadata = make(map[string]string, len(d.Monitored.Metadata))
			for k, v := range d.Monitored.Metadata {
				mo.Metadata[k] = m.free(v)
			}
		}
		rec.Monitored = &mo
	}
	rec.Masked = m.paths
	return rec
}

// masksFor returns the paths masked for tool.
func masksFor(all []compile.LogMask, tool string) [][]string {
	var out [][]string
	for _, lm := range all {
		applies := len(lm.Tools) == 0
		for _, g := range lm.Tools {
			if ok, _ := doublestar.Match(g, tool); ok {
				applies = true
				break
			}
		}
		if applies {
			out = append(out, lm.Paths...)
		}
	}
	return out
}

// masker masks the parts of one record, remembering what it masked.
type masker struct {
	paths []MaskedPath
	// hidden are the string values masked by a policy, to be cut out of
	// free text (reason, error) too.
	hidden []string
}

// args returns a masked copy of args: the values under masks replaced,
// then the credentials in every string redacted.
func (m *masker) args(prefix string, args map[string]any, masks [][]string) map[string]any {
	out, _ := copyJSON(args).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for _, path := range masks {
		m.maskPath(out, path, prefix)
	}
	m.redactAll(out, prefix)
	return out
}

// maskPath replaces the values of v under path (relative to at) with the
// mask, recording each.
func (m *masker) maskPath(v any, path []string, at string) {
	if len(path) == 0 {
		return
	}
	set := func(get func() any, put func(any), where string) {
		if len(path) == 1 {
			x := get()
			if s, ok := x.(string); ok && s == maskedValue {
				return
			}
			m.collect(x)
			put(maskedValue)
			m.paths = append(m.paths, MaskedPath{Path: where, By: "policy"})
			return
		}
		m.maskPath(get(), path[1:], where)
	}
	switch x := v.(type) {
	case map[string]any:
		keys := []string{path[0]}
		if path[0] == "*" {
			keys = slices.Sorted(maps.Keys(x))
		}
		for _, k := range keys {
			if _, ok := x[k]; !ok {
				continue
			}
			set(func() any { return x[k] }, func(nv any) { x[k] = nv }, at+"."+k)
		}
	case []any:
		for i := range x {
			if path[0] != "*" && path[0] != fmt.Sprint(i) {
				continue
			}
			set(func() any { return x[i] }, func(nv any) { x[i] = nv }, fmt.Sprintf("%s.%d", at, i))
		}
	}
}

// collect remembers the strings of a masked value (at least 4 bytes long,
// so that masking a flag does not eat the reason), to cut them out of free
// text.
func (m *masker) collect(v any) {
	switch x := v.(type) {
	case string:
		if len(x) >= 4 {
			m.hidden = append(m.hidden, x)
		}
	case float64, int, int64, json.Number:
		if s := fmt.Sprint(x); len(s) >= 4 {
			m.hidden = append(m.hidden, s)
		}
	case map[string]any:
		for _, e := range x {
			m.collect(e)
		}
	case []any:
		for _, e := range x {
			m.collect(e)
		}
	}
}

// redactAll redacts the credentials in every string of v (keys too) and
// bounds each string, in place.
func (m *masker) redactAll(v any, at string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e := x[k]
			nk := k
			if r := stdlib.RedactSecrets(k); r != k {
				nk = r
				m.paths = append(m.paths, MaskedPath{Path: at + "." + r, By: "secret"})
				delete(x, k)
			}
			if s, ok := e.(string); ok {
				x[nk] = m.text(at+"."+nk, s)
				continue
			}
			x[nk] = e
			m.redactAll(e, at+"."+nk)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				x[i] = m.text(fmt.Sprintf("%s.%d", at, i), s)
				continue
			}
			m.redactAll(e, fmt.Sprintf("%s.%d", at, i))
		}
	}
}

// text is s with its credentials redacted (recorded at path), bounded.
func (m *masker) text(path, s string) string {
	if s == maskedValue {
		return s
	}
	if r := stdlib.RedactSecrets(s); r != s {
		m.paths = append(m.paths, MaskedPath{Path: path, By: "secret"})
		s = r
	}
	return bound(s)
}

// free is free text (a reason, an error, metadata) with every masked value
// cut out and its credentials redacted, bounded.
func (m *masker) free(s string) string {
	if s == "" {
		return s
	}
	// Longest first, so that a value containing another is cut whole.
	hidden := slices.Clone(m.hidden)
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	for _, h := range hidden {
		s = strings.ReplaceAll(s, h, maskedValue)
	}
	return bound(stdlib.RedactSecrets(s))
}

// messages returns the messages with the credentials in their content
// redacted.
func (m *masker) messages(prefix string, ms []Message) []Message {
	if ms == nil {
		return nil
	}
	out := make([]Message, len(ms))
	for i, msg := range ms {
		out[i] = Message{Role: bound(msg.Role), Name: bound(msg.Name), Content: m.text(fmt.Sprintf("%s.%d.content", prefix, i), msg.Content)}
	}
	return out
}

// output returns the output with the credentials in its text and content
// redacted.
func (m *masker) output(prefix string, o *ModelOutput) *ModelOutput {
	if o == nil {
		return nil
	}
	out := &ModelOutput{Text: m.text(prefix+".text", o.Text), Content: copyJSON(o.Content)}
	if s, ok := out.Content.(string); ok {
		out.Content = m.text(prefix+".content", s)
	} else {
		m.redactAll(out.Content, prefix+".content")
	}
	return out
}

// bound cuts s to maxLoggedString bytes on a character boundary, saying
// how much was cut.
func bound(s string) string {
	if len(s) <= maxLoggedString {
		return s
	}
	cut := maxLoggedString
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes cut]", len(s)-cut)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// copyJSON deep-copies JSON data (maps, lists, scalars).
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}

// FileSinkOptions configures a FileSink.
type FileSinkOptions struct {
	// MaxBytes bounds the file before it rotates to FILE.1 (zero: 64 MiB;
	// negative: never rotate).
	MaxBytes int64
	// Sync makes each line durable (fsync) before the decision is
	// returned; without it a crash of the machine may lose the last lines.
	Sync bool
}

// FileSink writes each decision as one JSON line to a file: appended with
// one write under a lock, so that many processes (every hook process of a
// machine) can share one log without interleaving lines; past its size
// bound the file moves to FILE.1 (replacing the previous one) and a new
// one starts. The file is created with mode 0600.
type FileSink struct {
	f *logfile.File
}

// NewFileSink opens (or creates) the log at path.
func NewFileSink(path string, opts FileSinkOptions) (*FileSink, error) {
	f, err := logfile.Open(path, logfile.Options{MaxBytes: opts.MaxBytes, Sync: opts.Sync})
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return &FileSink{f: f}, nil
}

// WriteDecision implements DecisionSink.
func (s *FileSink) WriteDecision(_ context.Context, rec *DecisionRecord) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	if err := s.f.Append(b.Bytes()); err != nil {
		return fmt.Errorf("decision log %s: %w", s.f.Path(), err)
	}
	return nil
}
