package serve

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
)

// writeDecision answers decision d as writeJSON does (encoding/json's
// bytes and a newline, HTTP 200), writing the common decision's members
// directly: a decision with any member beyond verdict, phase, tool, call
// id, rule, reason, code, approval record, error, flags, and its audit
// record's id, time, digest and session (an agent, arguments, a rewrite,
// a judge, metadata, bundles, a listing, a monitor or a trace) is encoded
// by encoding/json, as is any string that is not plain (appendPlain). So
// no escaping is written here: TestWriteDecisionDifferential and
// FuzzWriteDecision hold every answer to encoding/json's, byte for byte,
// over decisions whose every field is filled at random (a field added to
// eval.Decision fails them until it is encoded here or sent to
// encoding/json).
func writeDecision(w http.ResponseWriter, d *eval.Decision) {
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	b, ok := appendDecision(buf.AvailableBuffer(), d)
	if !ok {
		// A copy: d stays where its caller made it (on its stack).
		writeJSON(w, http.StatusOK, *d)
		return
	}
	buf.Write(b)
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// appendDecision appends json.Marshal(d) and a newline to b; ok is false,
// and b is to be dropped, when d has a member it leaves to encoding/json.
func appendDecision(b []byte, d *eval.Decision) (_ []byte, ok bool) {
	if !d.Agent.IsZero() || d.Args != nil || d.Content != nil || d.Messages != nil || d.Output != nil ||
		d.Description != nil || d.Modified != nil || d.Judge != nil || d.Metadata != nil ||
		d.Bundles != nil || d.Listing != nil || d.Monitored != nil || d.Trace != nil {
		return nil, false
	}
	b = append(b, `{"verdict":`...)
	if b, ok = appendPlain(b, d.Verdict.String()); !ok {
		return nil, false
	}
	b = append(b, `,"phase":`...)
	if b, ok = appendPlain(b, d.Phase.String()); !ok {
		return nil, false
	}
	b = append(b, `,"tool":`...)
	if b, ok = appendPlain(b, d.Tool); !ok {
		return nil, false
	}
	for _, m := range [...]struct {
		name, v string
	}{{`,"call_id":`, d.CallID}, {`,"rule_id":`, d.RuleID}, {`,"policy":`, d.Policy}, {`,"file":`, d.File}} {
		if m.v == "" {
			continue
		}
		if b, ok = appendPlain(append(b, m.name...), m.v); !ok {
			return nil, false
		}
	}
	if d.Line != 0 {
		b = strconv.AppendInt(append(b, `,"line":`...), int64(d.Line), 10)
	}
	if d.Col != 0 {
		b = strconv.AppendInt(append(b, `,"col":`...), int64(d.Col), 10)
	}
	for _, m := range [...]struct {
		name, v string
	}{{`,"reason":`, d.Reason}, {`,"code":`, d.Code}} {
		if m.v == "" {
			continue
		}
		if b, ok = appendPlain(append(b, m.name...), m.v); !ok {
			return nil, false
		}
	}
	if a := d.Approval; a != nil {
		// An ask rule's record (eval.ApprovalRecord), between the code
		// and the error as in eval.Decision.
		if b, ok = appendPlain(append(b, `,"approval":{"rule_id":`...), a.Rule); !ok {
			return nil, false
		}
		if b, ok = appendPlain(append(b, `,"outcome":`...), string(a.Outcome)); !ok {
			return nil, false
		}
		for _, m := range [...]struct {
			name, v string
		}{{`,"remember":`, a.Remember}, {`,"reason":`, a.Reason}, {`,"request_id":`, a.Request}} {
			if m.v == "" {
				continue
			}
			if b, ok = appendPlain(append(b, m.name...), m.v); !ok {
				return nil, false
			}
		}
		b = append(b, '}')
	}
	if d.Error != "" {
		if b, ok = appendPlain(append(b, `,"error":`...), d.Error); !ok {
			return nil, false
		}
	}
	if d.Untrusted {
		b = append(b, `,"untrusted":true`...)
	}
	if d.StateTampered {
		b = append(b, `,"state_tampered":true`...)
	}
	if d.DecisionID != "" {
		if b, ok = appendPlain(append(b, `,"decision_id":`...), d.DecisionID); !ok {
			return nil, false
		}
	}
	if !d.Time.IsZero() {
		// time.Time's MarshalJSON, which encoding/json calls: RFC 3339
		// with nanoseconds, quoted; an error (a year past 9999) is
		// encoding/json's to report.
		b = append(b, `,"time":"`...)
		var err error
		if b, err = d.Time.AppendText(b); err != nil {
			return nil, false
		}
		b = append(b, '"')
	}
	for _, m := range [...]struct {
		name, v string
	}{{`,"policy_digest":`, d.PolicyDigest}, {`,"session_id":`, d.SessionID}} {
		if m.v == "" {
			continue
		}
		if b, ok = appendPlain(append(b, m.name...), m.v); !ok {
			return nil, false
		}
	}
	return append(b, "}\n"...), true
}

// appendPlain appends s quoted when encoding/json writes it as it is:
// every byte printable ASCII other than '"', '\\' and the three it
// escapes for HTML ('<', '>', '&'). ok is false for any other string.
func appendPlain(b []byte, s string) (_ []byte, ok bool) {
	if !jsonkind.Plain(s) {
		return nil, false
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
