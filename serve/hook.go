package serve

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/internal/deadline"
	"github.com/celguard/celguard/policy"
)

// FormCommand is the value of the hook endpoints' "form" query parameter
// that asks for the whole answer of a command hook (CommandAnswer) rather
// than the body of an HTTP hook: what `celguard hook HOST --server URL`
// asks for.
const FormCommand = "command"

// CommandAnswer is a command hook's answer as JSON: what to write on stdout
// and stderr, and the exit code.
type CommandAnswer struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Exit   int    `json:"exit"`
}

// hook answers POST /v1/hooks/{host}: the host's event in the body,
// decided as the command hook decides it (hooks.Respond), and answered
// with HTTP 200 and the host's answer whatever happens: a missing token, a
// body too large, a fault or the deadline are the host's deny. name is
// the path's {host}.
func (s *Server) hook(w http.ResponseWriter, r *http.Request, name string) {
	host, ok := s.hosts[name]
	if !ok {
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no host %q: want one of %s", name, strings.Join(hooks.Hosts(), ", ")))
		return
	}
	if s.cfg.Daemon != nil {
		s.daemonHook(w, r, host)
		return
	}
	start := time.Now()
	var form string
	if r.URL.RawQuery != "" {
		form = r.URL.Query().Get("form")
	}
	var ev hooks.Event
	var resp hooks.Response
	buf := buffers.Get().(*bytes.Buffer)
	ok = readHookBody(buf, r, s.cfg.MaxBodyBytes)
	body := buf.Bytes()
	// The body's buffer goes back to buffers once nothing reads it: the
	// decoded event and the answer hold copies of what they keep.
	reuse := true
	switch {
	case !s.tokenOK(r):
		ev, resp = s.hookFail(host, body, CodeUnauthorized, "this server needs an Authorization: Bearer token")
	case !ok:
		ev, resp = s.hookFail(host, nil, CodeTooLarge, fmt.Sprintf("the event is larger than %d bytes", s.cfg.MaxBodyBytes))
	case r.ProtoMajor != 1:
		// An HTTP/2 stream ends only when its handler returns: the event
		// is decided on a worker, and the handler answers at the deadline.
		ctx := deadline.New(r.Context(), start.Add(s.cfg.Timeout))
		var wev hooks.Event
		var wresp hooks.Response
		if s.workers.run(ctx, func() {
			wev, wresp = hooks.Respond(ctx, host, body, false, func(ctx context.Context, ev hooks.Event) (hooks.Response, error) {
				return s.hookEvent(ctx, host, ev, "")
			})
		}) {
			ev, resp = wev, wresp
		} else {
			reuse = false // the worker may still read body
			ev, resp = s.hookFail(host, body, CodeDeadlineExceeded, fmt.Sprintf("no decision within the server's deadline (%s)", s.cfg.Timeout))
		}
		ctx.Stop()
	default:
		ctx := deadline.New(r.Context(), start.Add(s.cfg.Timeout))
		// The event is decided here; the deadline's timer answers the
		// request if Respond has not returned by then (ontime). Respond
		// recovers a panic of its own.
		j := hookJobs.Get().(*hookJob)
		j.s, j.w, j.name, j.host, j.body, j.form, j.start = s, w, name, host, body, form, start
		dl, _ := ctx.Deadline()
		j.arm(dl)
		ev, resp = hooks.Respond(ctx, host, body, false, j.handleFn)
		inTime, reusable := j.settle()
		ctx.Stop()
		if reusable {
			j.s, j.w, j.host, j.body = nil, nil, nil, nil
			hookJobs.Put(j)
		}
		if !inTime {
			return // the deadline's answer is written (hookJob.fire), and buf left to the collector
		}
	}
	s.hookAnswer(w, name, host, form, start, ev, resp)
	if reuse {
		putBuffer(buf)
	}
}

// readHookBody reads a hook's body into buf; ok is false when it is too
// large (nothing is answered: the caller answers with the host's deny). A
// body that could not be read whole fails to decode.
func readHookBody(buf *bytes.Buffer, r *http.Request, limit int64) (ok bool) {
	if n := r.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + bytes.MinRead) // one read, and the EOF, without growing
	}
	return !tooLarge(readLimited(buf, r.Body, limit))
}

// hookAnswer writes the host's answer resp to event ev, HTTP 200, in the
// command hook's form when form says so, and counts it.
func (s *Server) hookAnswer(w http.ResponseWriter, name string, host hooks.Host, form string, start time.Time, ev hooks.Event, resp hooks.Response) {
	if resp.Exit != 0 {
		s.metrics.hookFailures.WithLabelValues(name).Inc()
		s.log.Warn("hook event failed", "host", name, "event", ev.Name, "session_id", ev.SessionID, "exit", resp.Exit, "stderr", resp.Stderr)
	}
	s.metrics.hookLatencyBy.of(name).Observe(time.Since(start).Seconds())
	if form == FormCommand {
		writeJSON(w, http.StatusOK, CommandAnswer{Stdout: string(resp.Stdout), Stderr: resp.Stderr, Exit: resp.Exit})
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(hooks.HTTPBody(host, ev, resp))
}

// hookJob is the deadline of a hook event decided on its request's
// goroutine (Server.hook): what its timer needs to answer the request
// with the host's deny.
type hookJob struct {
	ontime
	s        *Server
	w        http.ResponseWriter
	name     string
	host     hooks.Host
	body     []byte
	form     string
	start    time.Time
	handleFn func(context.Context, hooks.Event) (hooks.Response, error) // handle, bound once
}

// hookJobs are the hook jobs free for reuse.
var hookJobs = sync.Pool{New: func() any {
	j := new(hookJob)
	j.init(j.fire)
	j.handleFn = j.handle
	return j
}}

// fire answers the request with the deadline's failure (the host's deny),
// unless its event's decision returned first.
func (j *hookJob) fire() {
	if !j.claim() {
		return
	}
	s := j.s
	ev, resp := s.hookFail(j.host, j.body, CodeDeadlineExceeded, fmt.Sprintf("no decision within the server's deadline (%s)", s.cfg.Timeout))
	lateAnswer(j.w, func(w http.ResponseWriter) { s.hookAnswer(w, j.name, j.host, j.form, j.start, ev, resp) })
	j.answeredLate()
}

func (j *hookJob) handle(ctx context.Context, ev hooks.Event) (hooks.Response, error) {
	return j.s.hookEvent(ctx, j.host, ev, "")
}

// hookFail answers an event that is not decided: the host's failure
// answer, closed (at turn end, hooks' usual non-blocking error), with the
// event decoded when it can be, so that the answer has its form.
func (s *Server) hookFail(host hooks.Host, body []byte, code, reason string) (hooks.Event, hooks.Response) {
	s.metrics.faults.WithLabelValues(code).Inc()
	ev, err := host.Decode(body)
	if err != nil {
		ev = hooks.Event{Host: host.Name()}
	}
	return ev, host.Fail(ev, reason+" (code "+code+")", ev.Kind == hooks.KindTurnEnd)
}

// hookEvent decides one decoded event in the server's sessions.
// want, when not empty, is the policy digest the caller expects (the
// hook's daemon client): a project whose set in force differs reads its
// policies again first.
func (s *Server) hookEvent(ctx context.Context, host hooks.Host, ev hooks.Event, want string) (hooks.Response, error) {
	switch ev.Kind {
	case hooks.KindIgnore:
		return host.Encode(ev, eval.Decision{}), nil
	case hooks.KindSessionEnd:
		s.endSession(ev.SessionID)
		return host.Encode(ev, eval.Decision{}), nil
	}
	// A host's session id is never in a path: only its length is bounded.
	if len(ev.SessionID) > maxSessionID {
		return hooks.Response{}, fmt.Errorf("the session id is longer than %d bytes", maxSessionID)
	}
	// The layers the hook run in the event's directory reads: its
	// project's (the composition root keeps one compiled set per project).
	guard, err := s.guard.ForWorkDir(ev.Cwd, want)
	if err != nil {
		return hooks.Response{}, err
	}
	sess, created, err := s.sessions.get(ev.SessionID, s.cfg.Now(), func() *session {
		return &session{Session: s.eng.NewSession(ev.SessionID, ev.Meta)}
	})
	if err != nil {
		s.metrics.faults.WithLabelValues(CodeTooManySessions).Inc()
		return hooks.Response{}, fmt.Errorf("%w (code %s)", err, CodeTooManySessions)
	}
	if created {
		s.metrics.sessions.Set(float64(s.sessions.len()))
	}
	h, hcreated := sess.on(guard.Engine(), s.eng, ev.Meta)
	if (created || hcreated) && ev.Kind == hooks.KindSessionStart {
		if err := h.Open(ctx); err != nil {
			if created {
				s.sessions.remove(ev.SessionID)
			}
			return hooks.Response{}, err
		}
	}
	start := time.Now()
	d, err := hooks.Decide(ctx, h, ev)
	if err != nil {
		return hooks.Response{}, err
	}
	if d.Verdict != policy.VerdictUnspecified { // a session start or a new turn decides nothing
		s.metrics.decided(host.Name(), d, time.Since(start))
		s.noteHost(d, host.Name())
	}
	return host.Encode(ev, d), nil
}

// endSession ends a session the agent's way (a host's SessionEnd): what
// limits the agent stays. Its state is never deleted here, or an agent
// holding the agents' token could reset its own counters and halts by
// ending a session and starting it again: deleting a session's state is
// the operator's route (DELETE /v1/sessions/{id}). With a store the state
// is kept there and only the in-memory copy is released (a session
// started again with the id reads it back); without one the in-memory
// session is the state, so it stays until it has been idle for the
// server's idle time.
func (s *Server) endSession(id string) {
	if s.eng.Store() == nil {
		return
	}
	s.sessions.remove(id)
	s.metrics.sessions.Set(float64(s.sessions.len()))
}

// agentVersionKey is the context key of DaemonAgentVersion.
type agentVersionKey struct{}

// DaemonAgentVersion is the agent version the hook sent with the event
// Daemon.Decide decides in ctx (daemonwire.HeaderAgentVersion), "" when none.
func DaemonAgentVersion(ctx context.Context) string {
	v, _ := ctx.Value(agentVersionKey{}).(string)
	return v
}

// daemonHook answers a hook event as the command hook's decision daemon
// (Config.Daemon) over HTTP, with daemonAnswer: the answer's digest,
// version, manifest and MAC in the headers (daemonwire.HeaderDigest ...)
// and the command answer as the body. A request without a nonce, or one
// that is too large, answers 400: only the hook talks to the daemon, and
// it decides in process on any answer it cannot verify. The hook clients
// use the JSON-RPC wire on the same socket (serveDaemonConn); this route
// answers the same, for any other client.
func (s *Server) daemonHook(w http.ResponseWriter, r *http.Request, host hooks.Host) {
	s.used.Store(time.Now().UnixNano())
	// Not a buffer of buffers: the decision runs on a worker that may
	// still read the event after the deadline's answer (daemonAnswer).
	var buf bytes.Buffer
	ok := readHookBody(&buf, r, s.cfg.MaxBodyBytes)
	body := buf.Bytes()
	p := daemonwire.HookParams{Nonce: r.Header.Get(daemonwire.HeaderNonce), Host: host.Name(), WorkDir: r.Header.Get(daemonwire.HeaderWorkDir),
		Digest: r.Header.Get(daemonwire.HeaderDigest), Event: body, AgentVersion: r.Header.Get(daemonwire.HeaderAgentVersion)}
	if !ok {
		p.Nonce = "" // refused below, as too large
	}
	// The hook's trace (its TRACEPARENT), which the decision's span joins.
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	res, derr := s.daemonAnswer(ctx, host, p, s.workers.run)
	if derr != nil {
		writeError(w, derr.status, derr.code, derr.msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(daemonwire.HeaderDigest, res.Digest)
	w.Header().Set(daemonwire.HeaderVersion, res.Version)
	w.Header().Set(daemonwire.HeaderManifest, res.Manifest)
	w.Header().Set(daemonwire.HeaderMAC, res.MAC)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(res.Body)
}

// deadlineMessage says the daemon did not decide within its deadline.
func (s *Server) deadlineMessage() string {
	return fmt.Sprintf("no decision within the daemon's deadline (%s)", s.cfg.Timeout)
}

// daemonError is why the daemon gives no signed answer: an HTTP status
// and one of the server's codes.
type daemonError struct {
	status    int
	code, msg string
}

// daemonAnswer decides one event for the hook's decision daemon
// (Config.Daemon) and signs the answer, for both of its wires (HTTP:
// daemonHook; JSON-RPC: serveDaemonConn): decided by Daemon.Decide,
// answered as a command answer with the digest, the version, the manifest
// and the MAC over the client's nonce (daemonwire.Sum). ctx carries the
// hook's trace context. An error is answered unsigned, and the hook
// decides in process: a request without a nonce or with too large an
// event, a stale daemon (which stops), no decision within the deadline.
//
// run runs the decision and says whether it returned within ctx: on a
// worker (workers.run) for the HTTP route, whose handler answers at the
// deadline; on the caller's goroutine (inline) for the JSON-RPC wire,
// whose connection has a timer of its own (serveDaemonConn). Either way a
// decision that returned once ctx had ended (one that gave up at its
// deadline, say) is not signed: inline cannot tell, and workers.run may
// see the decision and the deadline at once.
func (s *Server) daemonAnswer(ctx context.Context, host hooks.Host, p daemonwire.HookParams, run func(context.Context, func()) bool) (daemonwire.HookResult, *daemonError) {
	d := s.cfg.Daemon
	s.used.Store(time.Now().UnixNano())
	if len(p.Nonce) != 2*daemonwire.NonceBytes || int64(len(p.Event)) > s.cfg.MaxBodyBytes {
		return daemonwire.HookResult{}, &daemonError{http.StatusBadRequest, CodeInvalidInput, "a daemon request carries a nonce and an event within the bound"}
	}
	if d.Stale != nil {
		if err := d.Stale(); err != nil {
			s.log.Info("the daemon is stale; stopping", "reason", err.Error())
			s.Stop()
			return daemonwire.HookResult{}, &daemonError{http.StatusServiceUnavailable, CodeDaemonStale, err.Error()}
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// The hook's agent version, for Decide's telemetry.
	ctx = context.WithValue(ctx, agentVersionKey{}, p.AgentVersion)
	var resp hooks.Response
	var digest, manifest string
	if !run(ctx, func() {
		resp, digest, manifest = d.Decide(ctx, host, p.Event, p.WorkDir, p.Digest)
	}) || ctx.Err() != nil {
		// No signed answer: the hook decides in process.
		return daemonwire.HookResult{}, &daemonError{http.StatusServiceUnavailable, CodeDeadlineExceeded, s.deadlineMessage()}
	}
	s.metrics.hookLatencyBy.of(host.Name()).Observe(time.Since(start).Seconds())
	answer, err := json.Marshal(CommandAnswer{Stdout: string(resp.Stdout), Stderr: resp.Stderr, Exit: resp.Exit})
	if err != nil {
		return daemonwire.HookResult{}, &daemonError{http.StatusInternalServerError, CodeInternalError, err.Error()}
	}
	res := daemonwire.HookResult{Digest: digest, Version: s.cfg.Version, Manifest: manifest, Body: answer}
	res.MAC = hex.EncodeToString(daemonwire.Sum(d.Key, res.Answer(p)))
	s.answered.Add(1)
	return res, nil
}
