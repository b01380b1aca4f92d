package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/deadline"
	"github.com/celguard/celguard/policy"
)

// hostAPI is the host label of the session API's decisions in metrics.
const hostAPI = "api"

// maxSessionID bounds a session id's length in bytes.
const maxSessionID = 256

// sessionRequest is the body of POST /v1/sessions.
type sessionRequest struct {
	SessionID string         `json:"session_id"`
	Agent     eval.Agent     `json:"agent"`
	Meta      map[string]any `json:"meta"`
}

// sessionAnswer is the answer of POST /v1/sessions and of turns/start.
type sessionAnswer struct {
	SessionID string `json:"session_id"`
	Turn      uint64 `json:"turn"`
}

// afterRequest is the body of POST /v1/sessions/{id}/after.
type afterRequest struct {
	eval.Call
	Result *eval.Result `json:"result"`
}

// outputRequest is the body of POST /v1/sessions/{id}/output.
type outputRequest struct {
	Output *struct {
		Text    string `json:"text"`
		Content any    `json:"content"`
	} `json:"output"`
	Agent eval.Agent `json:"agent"`
	ID    string     `json:"call_id"`
}

// haltRequest is the body of POST and DELETE /v1/halt.
type haltRequest struct {
	Scope  string `json:"scope"`
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// haltAnswer is the answer of /v1/halt.
type haltAnswer struct {
	Scope  string `json:"scope"`
	Key    string `json:"key"`
	Halted bool   `json:"halted"`
}

// errorAnswer is the body of every answer that is not a decision.
type errorAnswer struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req sessionRequest
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &req, true) {
		return
	}
	if req.SessionID == "" {
		req.SessionID = newID()
	}
	sess, created, ok := s.session(w, req.SessionID, req.Agent, req.Meta)
	if !ok {
		return
	}
	if created {
		// With a store: the session's metadata is written for every
		// replica, or an existing session's state is read.
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		err := sess.Open(ctx)
		cancel()
		if err != nil {
			s.sessions.remove(sess.ID())
			s.storeFailed(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, sessionAnswer{SessionID: sess.ID(), Turn: sess.Turn()})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := checkSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, err.Error())
		return
	}
	s.sessions.remove(id)
	s.metrics.sessions.Set(float64(s.sessions.len()))
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	if err := s.eng.DeleteSession(ctx, id); err != nil {
		s.storeFailed(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) startTurn(w http.ResponseWriter, r *http.Request, id string) {
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &struct{}{}, true) {
		return
	}
	sess, _, ok := s.session(w, id, eval.Agent{}, nil)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	turn, err := sess.NextTurn(ctx)
	if err != nil {
		// The turn stays as it was: a halt of the last one stays in force.
		s.storeFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionAnswer{SessionID: sess.ID(), Turn: turn})
}

func (s *Server) endTurn(w http.ResponseWriter, r *http.Request, id string) {
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &struct{}{}, true) {
		return
	}
	sess, _, ok := s.session(w, id, eval.Agent{}, nil)
	if !ok {
		return
	}
	d, ok := s.decide(r, w, hostAPI, policy.PhaseTurnEnd, eval.Call{}, func(ctx context.Context) (eval.Decision, error) {
		return sess.EndTurn(ctx)
	})
	if ok {
		writeDecision(w, &d)
	}
}

func (s *Server) before(w http.ResponseWriter, r *http.Request, id string) {
	answerDecision(s, w, r, id, policy.PhaseBefore, checkCall, func(call *eval.Call, sess *session) (eval.Call, decider) {
		call.Agent = sess.agentOr(call.Agent)
		return *call, func(ctx context.Context) (eval.Decision, error) {
			h, err := s.inProject(sess, call.Cwd)
			if err != nil {
				return eval.Decision{}, err
			}
			return h.Before(ctx, *call)
		}
	})
}

func (s *Server) after(w http.ResponseWriter, r *http.Request, id string) {
	check := func(req *afterRequest) string {
		if msg := checkCall(&req.Call); msg != "" {
			return msg
		}
		if req.Result == nil {
			return `the body has no "result": {"is_error": bool, "content": ...}`
		}
		return ""
	}
	answerDecision(s, w, r, id, policy.PhaseAfter, check, func(req *afterRequest, sess *session) (eval.Call, decider) {
		req.Agent = sess.agentOr(req.Agent)
		return req.Call, func(ctx context.Context) (eval.Decision, error) {
			h, err := s.inProject(sess, req.Cwd)
			if err != nil {
				return eval.Decision{}, err
			}
			return h.After(ctx, req.Call, *req.Result)
		}
	})
}

func (s *Server) input(w http.ResponseWriter, r *http.Request, id string) {
	check := func(in *eval.Input) string {
		if in.Messages == nil {
			return `the body has no "messages": [{"role", "content", "name"?}, ...]`
		}
		return ""
	}
	answerDecision(s, w, r, id, policy.PhaseInput, check, func(in *eval.Input, sess *session) (eval.Call, decider) {
		in.Agent = sess.agentOr(in.Agent)
		return eval.Call{ID: in.ID, Agent: in.Agent}, func(ctx context.Context) (eval.Decision, error) { return sess.Input(ctx, *in) }
	})
}

func (s *Server) output(w http.ResponseWriter, r *http.Request, id string) {
	check := func(req *outputRequest) string {
		if req.Output == nil {
			return `the body has no "output": {"text", "content"?}`
		}
		return ""
	}
	answerDecision(s, w, r, id, policy.PhaseOutput, check, func(req *outputRequest, sess *session) (eval.Call, decider) {
		out := eval.Output{Text: req.Output.Text, Content: req.Output.Content, Agent: sess.agentOr(req.Agent), ID: req.ID}
		return eval.Call{ID: out.ID, Agent: out.Agent}, func(ctx context.Context) (eval.Decision, error) { return sess.Output(ctx, out) }
	})
}

// decider makes one decision.
type decider func(context.Context) (eval.Decision, error)

// answerDecision answers a decision route: the body decoded into a T
// (strictly; 400 when it is not one, or when check says what is wrong
// with it), the session id, and the decision prepare names (with the
// call it is about, for a fault's block), made under the request's
// deadline (Server.decide).
func answerDecision[T any](s *Server, w http.ResponseWriter, r *http.Request, id string, phase policy.Phase, check func(*T) string, prepare func(*T, *session) (eval.Call, decider)) {
	var req T
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &req, false) {
		return
	}
	if msg := check(&req); msg != "" {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, msg)
		return
	}
	sess, _, ok := s.session(w, id, eval.Agent{}, nil)
	if !ok {
		return
	}
	call, f := prepare(&req, sess)
	if d, ok := s.decide(r, w, hostAPI, phase, call, f); ok {
		writeDecision(w, &d)
	}
}

// halt records (POST) or lifts (DELETE) a fleet halt: every session of an
// agent, a repository or an organisation (by the key its metadata names)
// is halted on every replica sharing the store (eval.Engine.Halt).
func (s *Server) halt(w http.ResponseWriter, r *http.Request) {
	var req haltRequest
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &req, false) {
		return
	}
	scope, err := policy.ParseScope(req.Scope)
	if err != nil || !scope.Shared() {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf(`"scope" must be agent, repository or org, not %q`, req.Scope))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	halted := r.Method == http.MethodPost
	if halted {
		err = s.eng.Halt(ctx, scope, req.Key, req.Reason)
	} else {
		err = s.eng.LiftHalt(ctx, scope, req.Key)
	}
	if err != nil {
		s.log.Error("fleet halt failed", "scope", req.Scope, "key", req.Key, "halt", halted, "error", err.Error())
		writeError(w, http.StatusServiceUnavailable, CodeStoreUnavailable, err.Error())
		return
	}
	s.log.Info("fleet halt", "scope", req.Scope, "key", req.Key, "halted", halted, "reason", req.Reason)
	writeJSON(w, http.StatusOK, haltAnswer{Scope: scope.String(), Key: req.Key, Halted: halted})
}

// inProject is sess's handle on the engine of the project of the call's
// working directory (celguard.Guard.ForWorkDir), as the hook endpoints
// decide: a call made in a repository is decided with its .celguard/, not
// with the server's own directory's. A working directory that is empty,
// relative or not on this machine is decided with the server's own
// engine. A project whose policies do not compile is an error: the call
// is refused.
func (s *Server) inProject(sess *session, cwd string) (*eval.Session, error) {
	g, err := s.guard.ForWorkDir(cwd, "")
	if err != nil {
		return nil, err
	}
	h, _ := sess.on(g.Engine(), s.eng, sess.meta)
	return h, nil
}

// checkCall says what is wrong with a call: no tool name.
func checkCall(call *eval.Call) string {
	if strings.TrimSpace(call.Tool) == "" {
		return `the call has no "tool"`
	}
	return ""
}

// session returns the session id, creating it (for agent, with meta) when
// the server has none: the first use of an id starts its session, so that
// a client whose session expired carries on with a fresh one. It answers
// the error itself when it fails.
func (s *Server) session(w http.ResponseWriter, id string, agent eval.Agent, meta map[string]any) (sess *session, created, ok bool) {
	if err := checkSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, err.Error())
		return nil, false, false
	}
	sess, created, err := s.sessions.get(id, s.cfg.Now(), func() *session {
		return &session{Session: s.eng.NewSession(id, meta), agent: agent, meta: meta}
	})
	if err != nil {
		s.metrics.faults.WithLabelValues(CodeTooManySessions).Inc()
		writeError(w, http.StatusServiceUnavailable, CodeTooManySessions, err.Error())
		return nil, false, false
	}
	if created {
		s.metrics.sessions.Set(float64(s.sessions.len()))
	}
	return sess, created, true
}

// storeFailed answers 503 store_unavailable for a change of a session the
// store did not record.
func (s *Server) storeFailed(w http.ResponseWriter, err error) {
	s.metrics.faults.WithLabelValues(CodeStoreUnavailable).Inc()
	s.metrics.storeErrors.Inc()
	s.log.Error("the state store failed", "error", err.Error())
	writeError(w, http.StatusServiceUnavailable, CodeStoreUnavailable, err.Error())
}

// checkSessionID rejects an empty, overlong or unprintable id, or one with
// a '/' (it could not be named in a path).
func checkSessionID(id string) error {
	if id == "" {
		return errors.New("the session id is empty")
	}
	if len(id) > maxSessionID {
		return fmt.Errorf("the session id is longer than %d bytes", maxSessionID)
	}
	for _, r := range id {
		if r == '/' || !unicode.IsPrint(r) {
			return fmt.Errorf("the session id %q has a '/' or a character that is not printable", id)
		}
	}
	return nil
}

// decide runs f, the decision of call, under the request's deadline and
// returns its decision, for the caller to write to w; ok is false when the
// deadline passed first and its block is already written to w (ontime):
// the caller then writes nothing. It never fails open: a panic in f, the
// deadline passing, or an error from f with a decision that is not a
// refusal, is a block with a code that says which. f runs on the caller's
// goroutine, over HTTP/1 (r.ProtoMajor); over HTTP/2, whose stream ends
// only when its handler returns, f runs on a worker and the handler
// answers the deadline's block itself (decideOnWorker).
func (s *Server) decide(r *http.Request, w http.ResponseWriter, host string, phase policy.Phase, call eval.Call, f decider) (_ eval.Decision, ok bool) {
	start := time.Now()
	dctx := deadline.New(r.Context(), start.Add(s.cfg.Timeout))
	defer dctx.Stop()
	var (
		d        eval.Decision
		panicked any
		err      error
		late     bool
	)
	if r.ProtoMajor == 1 {
		j := decisionJobs.Get().(*decisionJob)
		j.s, j.w, j.host, j.phase, j.call, j.start = s, w, host, phase, call, start
		dl, _ := dctx.Deadline()
		j.arm(dl)
		d, panicked, err = runDecider(dctx, f)
		inTime, reusable := j.settle()
		if reusable {
			j.s, j.w, j.call = nil, nil, eval.Call{}
			decisionJobs.Put(j)
		}
		if !inTime {
			return eval.Decision{}, false // the deadline's block is written (decisionJob.fire)
		}
	} else {
		d, panicked, err, late = s.decideOnWorker(dctx, f)
	}
	switch {
	case late:
		d = s.fault(phase, call, CodeDeadlineExceeded, fmt.Sprintf("no decision within the server's deadline (%s)", s.cfg.Timeout))
	case panicked != nil:
		d = s.fault(phase, call, CodeInternalError, fmt.Sprintf("internal error: %v", panicked))
	case err != nil:
		d = s.faulted(dctx, phase, call, d, err)
	}
	if d.PolicyDigest == "" {
		d.PolicyDigest = s.eng.PolicySet().Digest()
	}
	s.metrics.decided(host, d, time.Since(start))
	s.noteHost(d, host)
	return d, true
}

// decideOnWorker runs f under ctx on a worker and waits for it until ctx
// ends (Server.decide over HTTP/2): late is true when ctx ended first, and
// f's results, which its worker may still write, are then not read.
func (s *Server) decideOnWorker(ctx *deadline.Context, f decider) (d eval.Decision, panicked any, err error, late bool) {
	var wd eval.Decision
	var wp any
	var we error
	if !s.workers.run(ctx, func() { wd, wp, we = runDecider(ctx, f) }) {
		return eval.Decision{}, nil, nil, true
	}
	return wd, wp, we, false
}

// runDecider is f's decision under ctx, or the panic it raised.
func runDecider(ctx context.Context, f decider) (d eval.Decision, panicked any, err error) {
	defer func() { panicked = recover() }()
	d, err = f(ctx)
	return d, nil, err
}

// decisionJob is the deadline of a decision (Server.decide): what its
// timer needs to answer the request with the deadline's block.
type decisionJob struct {
	ontime
	s     *Server
	w     http.ResponseWriter
	host  string
	phase policy.Phase
	call  eval.Call
	start time.Time
}

// decisionJobs are the decision jobs free for reuse.
var decisionJobs = sync.Pool{New: func() any {
	j := new(decisionJob)
	j.init(j.fire)
	return j
}}

// fire answers the request with the deadline's block, unless its decision
// returned first.
func (j *decisionJob) fire() {
	if !j.claim() {
		return
	}
	s := j.s
	d := s.fault(j.phase, j.call, CodeDeadlineExceeded, fmt.Sprintf("no decision within the server's deadline (%s)", s.cfg.Timeout))
	s.metrics.decided(j.host, d, time.Since(j.start))
	s.noteHost(d, j.host)
	lateAnswer(j.w, func(w http.ResponseWriter) { writeDecision(w, &d) })
	j.answeredLate()
}

// noteHost tells the console which host decision d came through.
func (s *Server) noteHost(d eval.Decision, host string) {
	if s.console != nil {
		s.console.feed.noteHost(d.DecisionID, host)
	}
}

// faulted is the decision of f that returned err with d: eval's own
// refusal, unless the deadline passed or d is not a refusal.
func (s *Server) faulted(ctx context.Context, phase policy.Phase, call eval.Call, d eval.Decision, err error) eval.Decision {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return s.fault(phase, call, CodeDeadlineExceeded, fmt.Sprintf("no decision within the server's deadline (%s): %v", s.cfg.Timeout, err))
	}
	if d.Allowed() || d.Verdict != policy.Block && d.Verdict != policy.Halt {
		return s.fault(phase, call, CodeInternalError, err.Error())
	}
	if d.Code == "" {
		d.Code = CodeInternalError
	}
	s.log.Warn("decision failed", "code", d.Code, "tool", call.Tool, "error", err.Error())
	s.metrics.faults.WithLabelValues(d.Code).Inc()
	return d
}

// fault is the block the server decides itself, with code and reason.
func (s *Server) fault(phase policy.Phase, call eval.Call, code, reason string) eval.Decision {
	s.log.Warn("decision failed", "code", code, "tool", call.Tool, "reason", reason)
	s.metrics.faults.WithLabelValues(code).Inc()
	d := eval.Refusal(phase, call.Tool, code, "celguard serve: "+reason)
	d.CallID, d.Agent, d.Time, d.PolicyDigest = call.ID, call.Agent, time.Now().UTC(), s.eng.PolicySet().Digest()
	return d
}

// readJSON decodes the body of r into v, one JSON value and no unknown
// field; an empty body is {} when empty is allowed. It answers 400 or 413
// itself and returns false when the body is not what v takes.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, empty bool) bool {
	buf, ok := readBody(w, r, limit)
	if !ok {
		return false
	}
	defer putBuffer(buf)
	body := buf.Bytes()
	if len(bytes.TrimSpace(body)) == 0 {
		if empty {
			return true
		}
		writeError(w, http.StatusBadRequest, CodeInvalidInput, "the body is empty: it must be a JSON object")
		return false
	}
	// Nothing decoded points into buf, which is reused (decodeBody).
	err := decodeBody(body, v)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, "the body is not valid: "+err.Error())
		return false
	}
	return true
}

// readBody reads the body of r up to limit bytes into a buffer of
// buffers (the caller puts it back with putBuffer); past limit, it answers
// 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (*bytes.Buffer, bool) {
	buf := buffers.Get().(*bytes.Buffer)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + bytes.MinRead) // one read, and the EOF, without growing
	}
	err := readLimited(buf, r.Body, limit)
	switch {
	case tooLarge(err):
		putBuffer(buf)
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", limit))
		return nil, false
	case err != nil:
		putBuffer(buf)
		writeError(w, http.StatusBadRequest, CodeInvalidInput, "cannot read the body: "+err.Error())
		return nil, false
	}
	return buf, true
}

// buffers are the buffers request bodies are read into and answers
// encoded into, reused across requests.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer bounds the buffers kept for reuse: a large body's buffer
// is left to the garbage collector, so that the pool does not keep the
// largest body ever seen once per processor.
const maxPooledBuffer = 64 << 10

// putBuffer gives buf back to buffers; its bytes must not be used after.
func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBuffer {
		return
	}
	buf.Reset()
	buffers.Put(buf)
}

// jsonContentType is the Content-Type header value of JSON answers, one
// slice for every answer: net/http only reads it, and Header.Set and Add
// replace or copy it.
var jsonContentType = []string{"application/json"}

// writeJSON answers v as JSON with status: json.Marshal's bytes and a
// newline (json.Encoder writes the same), encoded into a reused buffer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		b, _ := json.Marshal(errorAnswer{errorBody{CodeInternalError, "cannot encode the answer: " + err.Error()}})
		buf.Write(append(b, '\n'))
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError answers {"error": {"code", "message"}} with status.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorAnswer{errorBody{code, msg}})
}

// newID is a random 128-bit id in 32 hex digits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
