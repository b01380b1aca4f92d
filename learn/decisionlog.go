package learn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// The approvals in a decision log (docs/decision-log.md). A person
// approved the call of a before-phase record when:
//
//   - its approval says approved (an approver's yes) or remembered (a grant
//     or an approval remembered earlier in the session let it run); or
//   - it was asked (verdict ask: the host asked the person itself, as
//     Claude Code and Cursor do) and an after-phase record of the same
//     session and call id follows: the host ran the call, so the person
//     said yes.
//
// The log has no working directory: the record's who.repo_root stands for
// it when it is there (the hooks write it); without it, learn proposes only
// exact rules for the record's calls. Arguments the log masked or cut
// cannot be learnt from: such a record is skipped, with a note.

// MaxRecord bounds one line of a decision log, in bytes.
const MaxRecord = 4 << 20

// maxPendingAsks bounds the asks held while waiting for their after
// record; past it the oldest is forgotten (never learnt from).
const maxPendingAsks = 1 << 14

// logRecord is what learn reads of a decision log line.
type logRecord struct {
	SessionID string               `json:"session_id"`
	CallID    string               `json:"call_id"`
	Phase     string               `json:"phase"`
	Tool      string               `json:"tool"`
	Args      map[string]any       `json:"args"`
	Verdict   string               `json:"verdict"`
	RuleID    string               `json:"rule_id"`
	Approval  *eval.ApprovalRecord `json:"approval"`
	Who       *struct {
		RepoRoot string `json:"repo_root"`
	} `json:"who"`
}

// ReadDecisionLog reads the approvals of a decision log, streaming it line
// by line. A line that is not a JSON object of the log's shape is an
// error at its line (CodeSyntax, CodeInvalid), and the lines after it are
// still read.
func ReadDecisionLog(name string, data []byte) ([]Approval, policy.Diagnostics) {
	return readDecisionLog(name, bytes.NewReader(data))
}

func readDecisionLog(name string, r io.Reader) ([]Approval, policy.Diagnostics) {
	var (
		apps []Approval
		ds   policy.Diagnostics
	)
	asks := map[string]Approval{}
	var order []string
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		text, long, err := readLine(br)
		if err == io.EOF && len(text) == 0 && !long {
			break
		}
		at := policy.Pos{File: name, Line: line, Col: 1}
		if long {
			ds = append(ds, errorAt(CodeSyntax, at, "the record is longer than %d bytes", MaxRecord))
			if err != nil {
				break
			}
			continue
		}
		if len(bytes.TrimSpace(text)) > 0 {
			rec, d := parseRecord(at, text)
			if d != nil {
				ds = append(ds, *d)
			} else if app, key, asked, ok := approvalOf(rec, at, &ds); ok {
				if asked {
					if _, dup := asks[key]; !dup {
						order = append(order, key)
					}
					asks[key] = app
					if len(order) > maxPendingAsks {
						delete(asks, order[0])
						order = order[1:]
					}
				} else {
					apps = append(apps, app)
				}
			} else if rec.Phase == "after" && rec.CallID != "" {
				key := rec.SessionID + "\x00" + rec.CallID
				if app, found := asks[key]; found {
					apps = append(apps, app)
					delete(asks, key)
				}
			}
		}
		if err != nil {
			break
		}
	}
	return apps, ds
}

// readLine reads one line without its newline; long says it was longer
// than MaxRecord (the rest of it is skipped).
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(buf)+len(chunk) > MaxRecord {
			long = true
		} else {
			buf = append(buf, chunk...)
		}
		if err != nil || !isPrefix {
			if err == io.EOF && (len(buf) > 0 || long) {
				return buf, long, nil
			}
			return buf, long, err
		}
	}
}

// parseRecord decodes one line, or says why it cannot be.
func parseRecord(at policy.Pos, text []byte) (*logRecord, *policy.Diagnostic) {
	var rec logRecord
	dec := json.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&rec); err != nil {
		d := errorAt(CodeSyntax, at, "not a decision log record: %s", jsonError(err))
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			d.Pos.Col = int(se.Offset)
		case errors.As(err, &te):
			d.Pos.Col = int(te.Offset)
		}
		return nil, &d
	}
	if dec.More() {
		d := errorAt(CodeSyntax, at, "more than one JSON value on the line")
		d.Pos.Col = int(dec.InputOffset()) + 1
		return nil, &d
	}
	if _, err := policy.ParsePhase(rec.Phase); rec.Phase != "" && err != nil {
		d := errorAt(CodeInvalid, at, "phase %q is not a phase of a decision", rec.Phase)
		return nil, &d
	}
	return &rec, nil
}

// jsonError is err without the package's prefix.
func jsonError(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "the line ends inside a JSON value"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// approvalOf is the approval a record holds, if any: ok with asked false
// for a call approved outright, with asked true for an ask waiting for its
// after record (under key).
func approvalOf(rec *logRecord, at policy.Pos, ds *policy.Diagnostics) (app Approval, key string, asked, ok bool) {
	if rec.Phase != "before" {
		return Approval{}, "", false, false
	}
	approved := rec.Approval != nil && (rec.Approval.Outcome == eval.ApprovalApproved || rec.Approval.Outcome == eval.ApprovalRemembered) &&
		(rec.Verdict == "allow" || rec.Verdict == "modify")
	asked = rec.Verdict == "ask" && rec.CallID != ""
	if !approved && !asked {
		return Approval{}, "", false, false
	}
	if rec.Tool == "" {
		*ds = append(*ds, errorAt(CodeInvalid, at, "an approved call without a tool"))
		return Approval{}, "", false, false
	}
	if why := maskedIn(rec.Args); why != "" {
		*ds = append(*ds, noteAt(CodeSkipped, at, "the %s call's arguments were %s in the log: no rule is learnt from it", rec.Tool, why))
		return Approval{}, "", false, false
	}
	app = Approval{Source: FromApprovals, Pos: at, Call: Call{Tool: rec.Tool, Args: rec.Args}, Rule: rec.RuleID}
	if rec.Approval != nil && rec.Approval.Rule != "" {
		app.Rule = rec.Approval.Rule
	}
	if rec.Who != nil {
		app.Cwd = rec.Who.RepoRoot
	}
	return app, rec.SessionID + "\x00" + rec.CallID, asked, true
}

// maskedIn says how the arguments were masked or cut, or "".
func maskedIn(v any) string {
	switch x := v.(type) {
	case string:
		switch {
		case strings.Contains(x, "[MASKED]"):
			return "masked"
		case strings.Contains(x, "[REDACTED:"):
			return "redacted"
		case strings.Contains(x, " bytes cut]"):
			return "cut"
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if w := maskedIn(k); w != "" {
				return w
			}
			if w := maskedIn(x[k]); w != "" {
				return w
			}
		}
	case []any:
		for _, e := range x {
			if w := maskedIn(e); w != "" {
				return w
			}
		}
	}
	return ""
}

// String renders a call for messages.
func (c Call) String() string {
	b, _ := json.Marshal(c.Args)
	s := c.Tool + " " + string(b)
	if c.Cwd != "" {
		s += " in " + c.Cwd
	}
	return fmt.Sprint(s)
}
