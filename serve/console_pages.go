package serve

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

//go:embed ui
var consoleFiles embed.FS

// consoleTemplates are the console's pages (ui/*.html), parsed on first
// use: parsing them at package init cost every hook process 3,600
// allocations (TestInitBudget) for a console it never serves.
var consoleTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"ago":   func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
		"args":  formatArgs,
		"json":  formatJSON,
		"agent": formatAgent,
		"short": func(s string) string {
			if len(s) > 19 {
				return s[:19] + "…"
			}
			return s
		},
	}).ParseFS(consoleFiles, "ui/*.html"))
})

// console is what the console keeps: its logged-in operators, the recent
// decisions, and the playground's one slot.
type console struct {
	sessions consoleSessions
	feed     *consoleFeed
	play     chan struct{}
	// closing is closed when the server drains: the event streams end,
	// so that they do not hold the shutdown.
	closing   chan struct{}
	closeOnce sync.Once
}

func newConsole() *console {
	return &console{feed: newConsoleFeed(), play: make(chan struct{}, 1), closing: make(chan struct{})}
}

// close ends the event streams.
func (c *console) close() { c.closeOnce.Do(func() { close(c.closing) }) }

func contextWith(r *http.Request, cs *consoleSession) context.Context {
	return context.WithValue(r.Context(), consoleKey{}, cs)
}

func operatorOf(r *http.Request) *consoleSession {
	cs, _ := r.Context().Value(consoleKey{}).(*consoleSession)
	return cs
}

// formatArgs renders arguments as indented JSON for people.
func formatArgs(args map[string]any) string {
	if len(args) == 0 {
		return "{}"
	}
	return formatJSON(args)
}

func formatJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func formatAgent(a eval.Agent) string {
	if a.IsZero() {
		return ""
	}
	parts := []string{}
	if a.Name != "" {
		parts = append(parts, a.Name)
	}
	keys := make([]string, 0, len(a.IDs))
	for k := range a.IDs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+a.IDs[k])
	}
	return strings.Join(parts, " ")
}

// page is what every page's layout reads.
type page struct {
	Title string
	Nav   string
	CSRF  string
	Who   string
	Flash string
	Error string
	Data  any
}

// render answers a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if cs := operatorOf(r); cs != nil {
		p.CSRF, p.Who = cs.csrf, cs.name
	}
	var b strings.Builder
	if err := consoleTemplates().ExecuteTemplate(&b, name, p); err != nil {
		s.log.Error("console page failed", "page", name, "error", err.Error())
		consoleError(w, r, http.StatusInternalServerError, CodeInternalError, "the page could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// consoleStatic answers the script and the style sheet.
func (s *Server) consoleStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	types := map[string]string{"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
	ct, ok := types[name]
	if !ok {
		consoleError(w, r, http.StatusNotFound, CodeNotFound, "no such file")
		return
	}
	b, err := fs.ReadFile(consoleFiles, "ui/"+name)
	if err != nil {
		consoleError(w, r, http.StatusNotFound, CodeNotFound, "no such file")
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// ---- login

func (s *Server) consoleLoginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login.html", page{Title: "Log in"})
}

func (s *Server) consoleLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	token := r.PostFormValue("token")
	name := strings.TrimSpace(r.PostFormValue("name"))
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
		s.log.Warn("console login refused", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "login.html", page{Title: "Log in", Error: "That is not the operator token."})
		return
	}
	if name == "" || utf8.RuneCountInString(name) > maxOperatorName || strings.ContainsFunc(name, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		s.render(w, r, http.StatusBadRequest, "login.html", page{Title: "Log in", Error: fmt.Sprintf("Say who you are: a name of 1 to %d printable characters (the decision log records it with your answers).", maxOperatorName)})
		return
	}
	cs := s.console.sessions.open(name, s.cfg.Now())
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: cs.id, Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.cfg.TLS != nil || r.TLS != nil, MaxAge: int(ConsoleMaxAge / time.Second)})
	s.log.Info("console login", "operator", cs.operator())
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (s *Server) consoleLogout(w http.ResponseWriter, r *http.Request) {
	if cs := operatorOf(r); cs != nil {
		s.console.sessions.close(cs.id)
	}
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: "", Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// ---- approvals inbox

// inboxItem is one pending request as the inbox shows it.
type inboxItem struct {
	Session string
	eval.PendingRequest
	// ArgsText is the arguments, masked, as indented JSON.
	ArgsText string
	// Rule is where the rule is, as the set in force has it.
	RuleFile string
	RuleLine int
	Agent    string
	Host     string
	Meta     string
}

// inbox lists the pending requests of every session the server holds,
// oldest first, masked as the decision log masks a call.
func (s *Server) inbox(ctx context.Context) ([]inboxItem, error) {
	set := s.eng.PolicySet()
	var out []inboxItem
	for _, sess := range s.sessions.all() {
		if err := sess.Sync(ctx); err != nil {
			return nil, err
		}
		for _, rq := range sess.Requests() {
			m := decisionlog.MaskRequest(rq, set.LogMasks())
			it := inboxItem{Session: sess.ID(), PendingRequest: m, ArgsText: formatArgs(m.Args), Agent: formatAgent(sess.agent)}
			if m.ArgsOmitted {
				it.ArgsText = "(larger than the bound a request keeps: not shown; the digest is the call's)"
			}
			if r, ok := set.Rule(rq.Rule); ok {
				it.RuleFile, it.RuleLine = r.Pos.File, r.Pos.Line
			}
			if rec, ok := s.console.feed.forRequest(sess.ID(), rq.ID); ok {
				if rec.RuleID == rq.Rule && rec.File != "" {
					// The decision's own: a project's rule (one server,
					// many repositories) is not in the server's set.
					it.RuleFile, it.RuleLine = rec.File, rec.Line
				}
				it.Host = rec.Host
				if a := formatAgent(rec.Agent); a != "" {
					it.Agent = a
				}
			}
			if meta := sess.State().Meta; len(meta) > 0 {
				it.Meta = formatJSON(meta)
			}
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b inboxItem) int { return a.Created.Compare(b.Created) })
	return out, nil
}

func (s *Server) consoleInbox(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	items, err := s.inbox(ctx)
	p := page{Title: "Approvals", Nav: "inbox", Data: items, Flash: flash(r.URL.Query().Get("done"))}
	if err != nil {
		p.Error = "The state store could not be read: " + err.Error()
	}
	s.render(w, r, http.StatusOK, "inbox.html", p)
}

// consoleInboxList answers the inbox's list alone (the script fetches it
// when the event stream says something changed).
func (s *Server) consoleInboxList(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	items, err := s.inbox(ctx)
	p := page{Data: items}
	if err != nil {
		p.Error = "The state store could not be read: " + err.Error()
	}
	s.render(w, r, http.StatusOK, "inbox-list.html", p)
}

// flash is the message of a redirect after an answer.
func flash(done string) string {
	switch done {
	case "once":
		return "Approved once: the identical call runs one time."
	case "session":
		return "Approved for the session: every call of that tool the rule asks about runs."
	case "deny":
		return "Denied: the exact call stays refused for the rest of the session, with your note."
	}
	return ""
}

// eventCoalesce is how long an event stream waits after a change before
// it says so, so that a burst of decisions makes one event.
const eventCoalesce = 150 * time.Millisecond

// consoleEvents streams "approvals" server-sent events: one at once, and
// one whenever a decision or an answer may have changed the pending
// requests (and every few seconds, for requests another replica recorded
// in a shared store).
func (s *Server) consoleEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		v, wake := s.console.feed.watch()
		if _, err := fmt.Fprintf(w, "event: approvals\ndata: %d\n\n", v); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.console.closing:
			return
		case <-wake:
			// A burst of decisions makes one event, not one each.
			select {
			case <-r.Context().Done():
				return
			case <-s.console.closing:
				return
			case <-time.After(eventCoalesce):
			}
		case <-tick.C:
		}
	}
}

// answerForm is the inbox's answer to one request.
type answerForm struct {
	Session, Request, Digest, Answer, Note string
}

// maxNote bounds an answer's note.
const maxNote = 1000

// consoleAnswer answers a request: approve once or for the session, or
// deny (eval.Session.Deny: the exact call is refused for the rest of the
// session, with the note), with an optional note. The form names the request and the digest
// of the call the operator was shown; a request that is gone (answered,
// expired) or whose call is not that one is refused (409 stale_request),
// so a grant is always for the call on the screen. The answer goes to the
// decision log and telemetry with the operator's identity; if they cannot
// record it, a grant is taken back and the answer refused.
func (s *Server) consoleAnswer(w http.ResponseWriter, r *http.Request) {
	f := answerForm{Session: r.PostFormValue("session"), Request: r.PostFormValue("request"), Digest: r.PostFormValue("digest"),
		Answer: r.PostFormValue("answer"), Note: strings.TrimSpace(r.PostFormValue("note"))}
	cs := operatorOf(r)
	fail := func(status int, code, msg string) {
		s.log.Warn("console answer refused", "operator", cs.operator(), "session_id", f.Session, "request", f.Request, "code", code)
		consoleError(w, r, status, code, msg)
	}
	if f.Answer != "once" && f.Answer != "session" && f.Answer != "deny" {
		fail(http.StatusBadRequest, CodeInvalidInput, `the answer must be "once", "session" or "deny"`)
		return
	}
	if utf8.RuneCountInString(f.Note) > maxNote {
		fail(http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf("the note is longer than %d characters", maxNote))
		return
	}
	sess, ok := s.sessions.lookup(f.Session)
	if !ok {
		fail(http.StatusConflict, CodeStaleAnswer, fmt.Sprintf("the server holds no session %q any more: the request is gone", f.Session))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	if err := sess.Sync(ctx); err != nil {
		s.storeFailed(w, err)
		return
	}
	// One read of the pending requests: a second one may have lost a
	// request since (expired, answered), and i would index past it.
	reqs := sess.Requests()
	i := slices.IndexFunc(reqs, func(p eval.PendingRequest) bool { return p.ID == f.Request })
	if i < 0 {
		fail(http.StatusConflict, CodeStaleAnswer, fmt.Sprintf("request %s was answered already, or expired: nothing was changed", f.Request))
		return
	}
	rq := reqs[i]
	if f.Digest == "" || subtle.ConstantTimeCompare([]byte(f.Digest), []byte(rq.Digest)) != 1 {
		fail(http.StatusConflict, CodeStaleAnswer, fmt.Sprintf("request %s is not the call the page showed (its digest differs): reload and read it again", f.Request))
		return
	}
	var (
		outcome = eval.ApprovalDenied
		scope   eval.GrantScope
		g       eval.Grant
		err     error
	)
	if f.Answer == "deny" {
		_, rq, err = sess.Deny(ctx, rq.ID, cs.operator(), f.Note)
	} else {
		outcome, scope = eval.ApprovalApproved, eval.GrantScope(f.Answer)
		g, rq, err = sess.Approve(ctx, rq.ID, scope, cs.operator())
	}
	switch {
	case err == nil:
	case errors.Is(err, eval.ErrNoRequest):
		fail(http.StatusConflict, CodeStaleAnswer, fmt.Sprintf("request %s was answered already: nothing was changed", f.Request))
		return
	case rq.Mandatory:
		fail(http.StatusForbidden, CodeMandatoryRule, err.Error())
		return
	default:
		s.storeFailed(w, err)
		return
	}
	id, err := s.recordAnswer(ctx, sess, rq, outcome, scope, f.Note, cs.operator(), "console")
	if err != nil {
		if f.Answer != "deny" { // a denial unrecorded stays: it only refuses
			_, _ = sess.Revoke(context.WithoutCancel(ctx), g.ID)
		}
		s.log.Error("console answer not recorded: taken back", "error", err.Error())
		consoleError(w, r, http.StatusServiceUnavailable, eval.CodeDecisionLogFailed,
			"the decision log could not record the answer, so it was not given: "+err.Error())
		return
	}
	s.console.feed.noteHost(id, "console")
	s.console.feed.changed()
	s.log.Info("console answer", "operator", cs.operator(), "session_id", sess.ID(), "request", rq.ID, "rule_id", rq.Rule, "answer", f.Answer)
	if r.Header.Get("X-Requested-With") != "" {
		writeJSON(w, http.StatusOK, map[string]string{"answer": f.Answer, "request_id": rq.ID, "message": flash(f.Answer)})
		return
	}
	http.Redirect(w, r, "/ui/?done="+f.Answer, http.StatusSeeOther)
}

// Codes of the decision log's records of an operator's answers.
const (
	CodeOperatorApproved = "operator_approved" // an operator approved a request in the console
	CodeOperatorDenied   = "operator_denied"   // an operator denied a request, in the console or through POST /v1/sessions/{id}/denials
)

// recordAnswer writes an operator's answer to the decision log and
// telemetry: a record of the ask (verdict ask, the rule that asked, the
// call masked as every record's) whose approval says how it was settled
// (approved or denied, the scope, the note) and whose metadata names the
// operator and where they answered (via: "console" or "api"). It returns
// the record's decision id.
func (s *Server) recordAnswer(ctx context.Context, sess *session, rq eval.PendingRequest, outcome eval.ApprovalOutcome, scope eval.GrantScope, note, operator, via string) (string, error) {
	set := s.eng.PolicySet()
	where := "in the console"
	if via != "console" {
		where = "through the " + via
	}
	code, reason := CodeOperatorApproved, "approved "+where+" by "+operator
	if outcome == eval.ApprovalDenied {
		code, reason = CodeOperatorDenied, "denied "+where+" by "+operator
	}
	if note != "" {
		reason += ": " + note
	}
	ref := compile.RuleRef{RuleID: rq.Rule, Policy: rq.Policy}
	if r, ok := set.Rule(rq.Rule); ok {
		ref.File, ref.Line, ref.Col = r.Pos.File, r.Pos.Line, r.Pos.Col
	}
	d := eval.Decision{Verdict: policy.Ask, Phase: policy.PhaseBefore, Tool: rq.Tool, Agent: sess.agent, RuleRef: ref, Code: code, Reason: reason,
		Approval:   &eval.ApprovalRecord{Rule: rq.Rule, Outcome: outcome, Remember: string(scope), Reason: note, Request: rq.ID},
		Metadata:   map[string]string{"operator": operator, "answered_in": via, "call_digest": rq.Digest},
		DecisionID: randomHex(16), Time: s.cfg.Now().UTC(), PolicyDigest: set.Digest(), SessionID: sess.ID(), Bundles: set.Bundles()}
	return d.DecisionID, s.guard.RecordEvent(ctx, &eval.DecisionEvent{Decision: d, Call: eval.Call{Tool: rq.Tool, Args: rq.Args, Cwd: rq.Cwd}, LogMasks: set.LogMasks()})
}

// ---- decisions

// decisionsData is the decisions page.
type decisionsData struct {
	Sessions  []sessionRow
	Held      int
	Filter    decisionFilter
	Decisions []consoleRecord
	Verdicts  []string
	Chart     []chartRow
	Kept      int
}

// consoleDecisions lists the recent decisions, newest first, filtered by
// the query's q (a substring), verdict and rule.
func (s *Server) consoleDecisions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	flt := decisionFilter{Query: q.Get("q"), Verdict: q.Get("verdict"), Rule: q.Get("rule")}
	d := decisionsData{Filter: flt, Decisions: s.console.feed.find(flt, 200, false),
		Verdicts: []string{"allow", "warn", "block", "halt", "ask", "modify"},
		Chart:    chartRows(s.console.feed.ruleCounts(s.cfg.Now(), 8))}
	d.Kept = len(s.console.feed.find(decisionFilter{}, 0, false))
	d.Sessions, d.Held = s.sessionRows(), s.sessions.len()
	s.render(w, r, http.StatusOK, "decisions.html", page{Title: "Decisions", Nav: "decisions", Data: d})
}

// sessionRow is a session the server holds, as the decisions page lists
// it: which agents are running.
type sessionRow struct {
	ID       string
	Agent    string
	Turn     uint64
	Pending  int
	Halted   bool
	LastUsed time.Time
}

// maxSessionRows bounds the sessions the decisions page lists.
const maxSessionRows = 50

// sessionRows are the sessions the server holds, the most recently used
// first (as this server last saw them; no store read).
func (s *Server) sessionRows() []sessionRow {
	var out []sessionRow
	for _, ss := range s.sessions.recent(maxSessionRows) {
		st := ss.State()
		out = append(out, sessionRow{ID: ss.ID(), Agent: formatAgent(ss.agent), Turn: st.Turn, Pending: len(st.Requests), Halted: st.Halted != nil, LastUsed: ss.last})
	}
	return out
}

// sessionData is a session's page.
type sessionData struct {
	ID       string
	Held     bool
	State    eval.SessionState
	Agent    string
	Meta     string
	Calls    []consoleRecord
	Counters []counterRow
}

type counterRow struct {
	Name  string
	Value string
}

func (s *Server) consoleSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := checkSessionID(id); err != nil {
		consoleError(w, r, http.StatusBadRequest, CodeInvalidInput, err.Error())
		return
	}
	d := sessionData{ID: id, Calls: s.console.feed.find(decisionFilter{Session: id}, 0, true)}
	if sess, ok := s.sessions.lookup(id); ok {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		_ = sess.Sync(ctx)
		cancel()
		d.Held, d.State, d.Agent = true, sess.State(), formatAgent(sess.agent)
		if len(d.State.Meta) > 0 {
			d.Meta = formatJSON(d.State.Meta)
		}
		for name, c := range d.State.Counters {
			d.Counters = append(d.Counters, counterRow{Name: name, Value: formatJSON(c)})
		}
		slices.SortFunc(d.Counters, func(a, b counterRow) int { return strings.Compare(a.Name, b.Name) })
	}
	if !d.Held && len(d.Calls) == 0 {
		consoleError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("the server holds no session %q and keeps no decision of it", id))
		return
	}
	s.render(w, r, http.StatusOK, "session.html", page{Title: "Session " + id, Nav: "decisions", Data: d})
}

// chartRow is one rule's bars, laid out for an inline SVG.
type chartRow struct {
	Rule  string
	Total int
	Max   int
	Bars  []chartBar
	Label string
}

type chartBar struct {
	X, Y, H int
	N       int
	Title   string
}

// chartRows lays out each series as bars 4 pixels wide in a 240 by 24 box.
func chartRows(series []ruleSeries) []chartRow {
	out := make([]chartRow, 0, len(series))
	for _, s := range series {
		row := chartRow{Rule: s.Rule, Total: s.Total}
		for _, n := range s.Counts {
			row.Max = max(row.Max, n)
		}
		for i, n := range s.Counts {
			if n == 0 {
				continue
			}
			h := max(1, n*24/max(1, row.Max))
			row.Bars = append(row.Bars, chartBar{X: i * 4, Y: 24 - h, H: h, N: n,
				Title: fmt.Sprintf("%d decision(s), %d minute(s) ago", n, chartBuckets-1-i)})
		}
		row.Label = fmt.Sprintf("%s: %d decisions in the last %d minutes, at most %d a minute", s.Rule, s.Total, chartBuckets, row.Max)
		out = append(out, row)
	}
	return out
}
