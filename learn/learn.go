// Package learn proposes allow rules from the approvals people gave
// (`celguard learn`, docs/learn.md): remembered grants and the rules
// `celguard approve --always` wrote, the approvals in a decision log,
// Claude Code's "don't ask again" records (permissions.allow of its
// settings files) and the asks a person approved in replayed sessions. It
// proposes the narrowest rules that would have avoided those asks: a rule
// generalises only where several approvals agree (the same tool, working
// directory, program and subcommand, options only as seen, operands under
// one directory prefix inside the workspace; the same URL host and
// scheme), and is otherwise the exact call. Every rule comes with a test
// suite in the policytest format: the approved calls as allow, and near
// misses (other paths, hosts, subcommands, added options, a pipe to a
// shell, a wrapper, another directory) that it must not allow.
//
// No rule is proposed that a mandatory rule refuses, or that would let a
// call of the built-in hostile corpus through with the rule added in the
// user's layer: Learn decides the corpus, rebased on each rule's working
// directory and the user's home, with and without the proposal, and drops
// (and reports, with the reason) every rule that loosens one.
//
// It is a package of its own, above hooks, decisionlog and policytest
// (whose records it reads and whose suites it writes) and below the
// command line, because mining approvals into rules is no other package's
// concern: eval decides, decisionlog records, policytest tests.
package learn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/celguard/celguard/policy"
)

// Source kinds: where approvals come from.
const (
	// FromGrants: the approvals remembered in the hooks' state directory
	// and the rules `celguard approve --always` wrote.
	FromGrants = "grants"
	// FromApprovals: a decision log (docs/decision-log.md).
	FromApprovals = "approvals"
	// FromClaude: a Claude Code settings file's permissions.allow.
	FromClaude = "claude"
	// FromReplay: recorded sessions (package replay: the hosts'
	// transcripts, a decision log, eval's event stream), whose calls the
	// policies ask about and the record shows ran.
	FromReplay = "replay"
)

// Kinds are the source kinds, in the order the output names them.
func Kinds() []string { return []string{FromGrants, FromApprovals, FromClaude, FromReplay} }

// Diagnostic codes of learn (docs/learn.md lists each with its fix).
const (
	// CodeSyntax: a record of a source is not what its format says (not
	// JSON, a field of the wrong type).
	CodeSyntax policy.Code = "learn_syntax"
	// CodeInvalid: a record reads but cannot be an approval (no tool, a
	// phase or outcome that does not exist).
	CodeInvalid policy.Code = "learn_invalid"
	// CodeSkipped: an approval no rule is learnt from (masked or cut
	// arguments, a call too large, a session approval that names no
	// call, a pattern that is not narrow); a note, not an error.
	CodeSkipped policy.Code = "learn_skipped"
	// CodeDropped: a rule proposed and then dropped, because a mandatory
	// rule refuses its approved call or it would let a hostile corpus
	// call through; a note.
	CodeDropped policy.Code = "learn_dropped"
)

// Call is a tool call: its tool, arguments and working directory.
type Call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
	Cwd  string         `json:"cwd,omitempty"`
}

// Approval is one approval a person gave, as a source recorded it: either
// a call (Call) or, from Claude Code, a rule the person chose (Pattern).
type Approval struct {
	// Source is the kind of source (FromGrants, ...), Pos where it is
	// recorded (file:line).
	Source string     `json:"source"`
	Pos    policy.Pos `json:"pos"`
	Call
	// Rule is the id of the rule that asked, when the source says.
	Rule string `json:"rule_id,omitempty"`
	// Pattern is the Claude Code rule (Tool(specifier)) the person chose
	// for "don't ask again"; nil for an approved call.
	Pattern *Pattern `json:"pattern,omitempty"`
}

// Input is one source of approvals: its kind and a file (or, for
// FromGrants, a state directory or a directory of --always rules).
type Input struct {
	Kind string
	Path string
}

// SourceDigest is a source as the output's header names it.
type SourceDigest struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
	// Approvals is how many approvals were read from it.
	Approvals int `json:"approvals"`
}

// digestOf is the sha256: digest of data.
func digestOf(data []byte) string {
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}

// Read reads the approvals of the inputs, in order. Problems that make a
// record unreadable are errors (a policy.Diagnostics, each at its
// position with CodeSyntax or CodeInvalid); records read but not learnt
// from are notes (CodeSkipped).
func Read(ctx context.Context, inputs []Input, opts Options) (apps []Approval, sources []SourceDigest, notes policy.Diagnostics, err error) {
	var errs policy.Diagnostics
	for _, in := range inputs {
		var (
			got    []Approval
			digest string
			ds     policy.Diagnostics
			rerr   error
		)
		switch in.Kind {
		case FromApprovals:
			got, digest, ds, rerr = streamFile(in.Path, readDecisionLog)
		case FromClaude:
			got, digest, ds, rerr = readFile(in.Path, ReadClaudeSettings)
		case FromGrants:
			got, digest, ds, rerr = ReadGrants(ctx, in.Path)
		case FromReplay:
			got, digest, ds, rerr = ReadReplay(ctx, in.Path, opts.Replay)
		default:
			return nil, nil, nil, fmt.Errorf("unknown source %q: want one of %v", in.Kind, Kinds())
		}
		if rerr != nil {
			return nil, nil, nil, rerr
		}
		for _, d := range ds {
			if d.Severity == policy.SeverityError {
				errs = append(errs, d)
			} else {
				notes = append(notes, d)
			}
		}
		apps = append(apps, got...)
		sources = append(sources, SourceDigest{Kind: in.Kind, Path: in.Path, Digest: digest, Approvals: len(got)})
	}
	if len(errs) > 0 {
		return apps, sources, notes, errs
	}
	return apps, sources, notes, nil
}

// MaxSettingsFile bounds a settings file read whole.
const MaxSettingsFile = policy.MaxFileSize

// readFile reads a whole source file (at most MaxSettingsFile bytes) and
// parses it with parse.
func readFile(path string, parse func(name string, data []byte) ([]Approval, policy.Diagnostics)) ([]Approval, string, policy.Diagnostics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSettingsFile+1))
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(data) > MaxSettingsFile {
		return nil, "", policy.Diagnostics{errorAt(CodeSyntax, policy.Pos{File: path, Line: 1, Col: 1}, "the file is larger than %d bytes", MaxSettingsFile)}, nil
	}
	apps, ds := parse(path, data)
	return apps, digestOf(data), ds, nil
}

// streamFile parses a source file as it reads it (a decision log of a
// month is never held in memory), digesting what it reads.
func streamFile(path string, parse func(name string, r io.Reader) ([]Approval, policy.Diagnostics)) ([]Approval, string, policy.Diagnostics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	er := &errReader{r: f}
	apps, ds := parse(path, io.TeeReader(er, h))
	if er.err != nil {
		return nil, "", nil, fmt.Errorf("cannot read %s: %w", path, er.err)
	}
	return apps, "sha256:" + hex.EncodeToString(h.Sum(nil)), ds, nil
}

// errReader remembers a read error other than the end of the file.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// errorAt is an error diagnostic.
func errorAt(code policy.Code, pos policy.Pos, format string, a ...any) policy.Diagnostic {
	return policy.Diagnostic{Code: code, Severity: policy.SeverityError, Pos: pos, Message: fmt.Sprintf(format, a...)}
}

// noteAt is an info diagnostic.
func noteAt(code policy.Code, pos policy.Pos, format string, a ...any) policy.Diagnostic {
	return policy.Diagnostic{Code: code, Severity: policy.SeverityInfo, Pos: pos, Message: fmt.Sprintf(format, a...)}
}

// sortDiagnostics orders diagnostics by position, then code and message.
func sortDiagnostics(ds policy.Diagnostics) {
	slices.SortStableFunc(ds, func(a, b policy.Diagnostic) int {
		switch {
		case a.Pos.File != b.Pos.File:
			return cmpStr(a.Pos.File, b.Pos.File)
		case a.Pos.Line != b.Pos.Line:
			return a.Pos.Line - b.Pos.Line
		case a.Pos.Col != b.Pos.Col:
			return a.Pos.Col - b.Pos.Col
		case a.Code != b.Code:
			return cmpStr(string(a.Code), string(b.Code))
		}
		return cmpStr(a.Message, b.Message)
	})
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
