package serve

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// plainStrings are strings encoding/json writes as they are, and
// escapedStrings strings it escapes in every way it does (HTML
// characters, quotes, control characters, U+2028, invalid UTF-8,
// non-ASCII).
var (
	plainStrings   = []string{"a", "Bash", "deny-rm-root", "rm root", "2026-11-27", "sha256:0f3a", "bench20.yaml", strings.Repeat("long ", 40)}
	escapedStrings = []string{"<script>&amp;</script>", "a > b", `quote " back \ slash`, "tab\tnl\n\x00\x1f\x7f", "line\u2028para\u2029",
		"bad \xff\xfe utf8 \xc3", "é漢字🙂"}
)

// randDecisionString is a plain string nineteen times in twenty.
func randDecisionString(r *rand.Rand) string {
	if r.IntN(20) == 0 {
		return escapedStrings[r.IntN(len(escapedStrings))]
	}
	return plainStrings[r.IntN(len(plainStrings))]
}

// randDecision is a decision with each exported field (those of its
// embedded rule reference too) set at random or left empty, found by
// reflection, so that a field added to eval.Decision is set too. The
// fields writeDecision leaves to encoding/json are set less often, so
// that most decisions take the direct path.
func randDecision(r *rand.Rand) eval.Decision {
	var d eval.Decision
	fillDecision(r, reflect.ValueOf(&d).Elem())
	return d
}

var timeType = reflect.TypeFor[time.Time]()

func fillDecision(r *rand.Rand, v reflect.Value) {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous && f.Kind() == reflect.Struct {
			fillDecision(r, f)
			continue
		}
		if r.IntN(2) == 0 {
			continue
		}
		switch {
		case f.Type() == timeType:
			t := time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2)))
			switch r.IntN(16) {
			case 0:
				t = t.In(time.FixedZone("z", (r.IntN(48)-24)*1800))
			case 1:
				t = time.Date(10000+r.IntN(3), 1, 1, 0, 0, 0, 0, time.UTC) // MarshalJSON fails
			default:
				t = t.UTC()
			}
			f.Set(reflect.ValueOf(t))
		case f.Kind() == reflect.String:
			f.SetString(randDecisionString(r))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(int64(r.IntN(12)) - 1)
			if f.Kind() == reflect.Int {
				f.SetInt(r.Int64N(1<<40) - 1<<39)
			}
		case f.CanUint():
			f.SetUint(uint64(r.IntN(12)))
		default:
			// An agent, arguments, a rewrite, records, a trace: set one
			// time in ten, with a value of its own kind; an approval
			// record, which writeDecision writes itself, one time in two.
			if r.IntN(10) != 0 && sf.Name != "Approval" {
				continue
			}
			switch f.Kind() {
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
				if f.Type().Elem().Kind() == reflect.Struct {
					fillDecision(r, f.Elem()) // an approval record, a judge's...
				}
			case reflect.Slice:
				f.Set(reflect.MakeSlice(f.Type(), r.IntN(2), 1))
			case reflect.Map:
				m := reflect.MakeMap(f.Type())
				m.SetMapIndex(reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem())
				f.Set(m)
			case reflect.Struct:
				if n := f.FieldByName("Name"); n.IsValid() && n.Kind() == reflect.String {
					n.SetString(randDecisionString(r))
				}
			}
		}
	}
}

// TestWriteDecisionDifferential: the answer of a decision is
// encoding/json's (writeJSON's), status, headers and bytes, for random
// decisions; and most of them take the direct path.
func TestWriteDecisionDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 5))
	direct := 0
	const n = 20000
	for i := range n {
		d := randDecision(r)
		if _, ok := appendDecision(nil, &d); ok {
			direct++
		}
		checkDecisionAnswer(t, i, d)
	}
	if direct < n/4 || direct > n-n/10 {
		t.Fatalf("%d of %d decisions took the direct path: want both paths taken often", direct, n)
	}
}

// checkDecisionAnswer fails t when writeDecision's answer of d is not
// writeJSON's.
func checkDecisionAnswer(t *testing.T, i int, d eval.Decision) {
	t.Helper()
	want, got := httptest.NewRecorder(), httptest.NewRecorder()
	writeJSON(want, http.StatusOK, d)
	writeDecision(got, &d)
	if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || !reflect.DeepEqual(got.Header(), want.Header()) {
		t.Fatalf("decision %d %+v:\n got %d %v %q\nwant %d %v %q", i, d, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
	}
	if b, ok := appendDecision(nil, &d); ok {
		js, err := json.Marshal(d)
		if err != nil || !bytes.Equal(b, append(js, '\n')) {
			t.Fatalf("decision %d: direct %q, json.Marshal %q (%v)", i, b, js, err)
		}
	}
}

// FuzzWriteDecision: the answer of a decision of the common shape (the
// fields writeDecision writes itself) is encoding/json's whatever its
// strings, numbers and time.
func FuzzWriteDecision(f *testing.F) {
	f.Add(uint8(3), uint8(1), "Bash", "c1", "deny-rm-root", "bench20", "bench20.yaml", 12, 3, "rm root", "", "", false, false, "d1", int64(1790000000), int64(5), "sha256:ab", "s", uint8(1), "deferred", "", "deploys need a person", "r1")
	f.Add(uint8(9), uint8(200), "<b>", "\u2028", "\xff", `"`, "é", -1, 0, "a&b", "x>y", "\x00", true, true, "", int64(-62135596801), int64(0), "", "", uint8(1), "<x>", "session", "\u2028", "\xff")
	f.Fuzz(func(t *testing.T, verdict, phase uint8, tool, callID, rule, pol, file string, line, col int, reason, code, errText string, untrusted, tampered bool, id string, sec, nsec int64, digest, session string, approval uint8, outcome, remember, aReason, request string) {
		d := eval.Decision{Verdict: policy.Verdict(verdict), Phase: policy.Phase(phase), Tool: tool, CallID: callID,
			Reason: reason, Code: code, Error: errText, Untrusted: untrusted, StateTampered: tampered,
			DecisionID: id, PolicyDigest: digest, SessionID: session}
		d.RuleID, d.Policy, d.File, d.Line, d.Col = rule, pol, file, line, col
		if sec != 0 || nsec != 0 {
			d.Time = time.Unix(sec, nsec%1e9).UTC()
		}
		if approval%2 == 1 {
			d.Approval = &eval.ApprovalRecord{Rule: rule, Outcome: eval.ApprovalOutcome(outcome), Remember: remember, Reason: aReason, Request: request}
		}
		checkDecisionAnswer(t, 0, d)
	})
}
