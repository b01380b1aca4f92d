// Package hooks speaks the hook protocols of AI-agent hosts: Claude Code,
// Codex, Gemini CLI and Cursor call a guard as a separate process for every
// tool call, with one JSON event on stdin, and read a decision from its
// stdout, its exit code and its stderr. Each host has its own dialect, and
// the differences matter: a field one host honours another ignores, and a
// verdict one host can express another cannot.
//
// The package exists so that eval never learns any of this. It sits above
// eval and below the command line: a Host decodes an event into an
// eval.Call (and eval.Result after the call) plus what the event means (a
// call about to run, a call that ran, a new turn, a session starting or
// ending), and encodes an eval.Decision into exactly what that host expects.
// Runner ties one event to a session whose state (counters, turn, halt,
// remembered approvals) lives in the signed state directory
// (store/statedir), one file per session, so that it survives from one
// hook process to the next. The agent can write those files, so they are
// authenticated (statedir.Key): a state file changed outside celguard
// restores fail-closed (statedir.TamperedError; eval marks the decision,
// decide.go rule 19), a changed AST cache entry is a miss.
//
// Two rules hold for every host. A verdict maps to the strongest thing the
// host can express and never to something weaker: an ask on a host that
// cannot ask becomes a block whose reason says approval is needed, and a
// rewrite the host cannot apply becomes an ask or a block, never a silent
// allow. And when celguard itself fails (an unreadable event, a policy that
// does not compile, unreadable state, a timeout), the answer to a tool call
// is what the host honours as a block, unless the caller chose to fail open;
// a new prompt goes through with a warning (Runner.promptThrough). The
// per-host tables are in docs/hooks.md; hooks/hostse2e checks them against
// the real hosts.
//
// The hosts are one table (HostInfo: names, settings files, events, tested
// versions), which serve, the command line and package hooks/setup read.
// Putting the hooks into a host's settings and checking them there (hook
// install, doctor) is package hooks/setup, above this one.
package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
	"github.com/celguard/celguard/policy"
)

// Kind is what a host event asks celguard to do.
type Kind int

// Event kinds.
const (
	// KindIgnore is an event celguard does not act on (notifications,
	// permission dialogs): the answer lets the host carry on.
	KindIgnore Kind = iota
	// KindSessionStart is a session starting or resuming.
	KindSessionStart
	// KindSessionEnd is a session ending. Its state is kept (what limits
	// the agent must not be the agent's to reset); the state directory's
	// cleanup removes it once it is old.
	KindSessionEnd
	// KindTurnStart is a new user prompt: turn-scoped counters reset and a
	// halt of the previous turn is lifted. With Messages (the prompt, where
	// the host sends it) the input rules then decide it (eval.Session.Input).
	KindTurnStart
	// KindBefore is a tool call about to run.
	KindBefore
	// KindAfter is a tool call that ran, successfully or not.
	KindAfter
	// KindTurnEnd is the agent's turn ending (Claude Code's and Codex's
	// Stop, Gemini CLI's AfterAgent, Cursor's stop): the turn_end rules
	// decide (eval.Session.EndTurn), and a warn is shown; the answer never
	// keeps the agent going, and a failure is not a block (there is no call
	// left to refuse).
	KindTurnEnd
	// KindInput is a request about to be sent to the model (Gemini CLI's
	// BeforeModel): the input rules decide its Messages.
	KindInput
	// KindOutput is the model's response (Gemini CLI's AfterModel, for
	// each streamed chunk): the output rules decide Output.
	KindOutput
	// KindPermission is the host about to ask the user about a call
	// (Claude Code's PermissionRequest): celguard notes it, so that the
	// call's after-event tells it the user approved (permission.go), and
	// answers nothing, so the host asks.
	KindPermission
)

var kindNames = [...]string{"ignore", "session_start", "session_end", "turn_start", "before", "after", "turn_end", "input", "output", "permission"}

// String names the kind.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Event is one hook event, decoded.
type Event struct {
	// Host is the name of the host that sent it.
	Host string
	// Name is the host's name for the event, e.g. "PreToolUse".
	Name string
	Kind Kind
	// SessionID is the host's session (or conversation) id, as sent.
	SessionID string
	// Meta is session metadata rules see as `session` (host, model,
	// permission mode, ...).
	Meta map[string]any
	// Cwd is the working directory the host names for the event (every
	// kind; Cursor's first workspace root when it names none): the
	// project whose policies decide it when one server serves many
	// (celguard.Guard.ForWorkDir).
	Cwd string
	// Call is the tool call (KindBefore and KindAfter).
	Call eval.Call
	// Result is the tool's result (KindAfter).
	Result eval.Result
	// Messages are the messages about to be sent to the model: the user's
	// prompt (KindTurnStart, where the host sends it) or the request
	// (KindInput).
	Messages []eval.Message
	// Output is the model's output (KindOutput).
	Output *eval.Output

	// response is the tool's raw output as the host sent it (KindAfter),
	// kept so a rewrite can be given back in the same shape.
	response any
	// chunk is, for a Gemini AfterModel chunk decided across the answer's
	// chunks (geministream.go), the chunk's own text, Output then being the
	// decided text to release in its place; nil otherwise.
	chunk *string
	// suggestions are the permission rules the host offers the user
	// (KindPermission: Claude Code's permission_suggestions).
	suggestions []any
	// failure marks an after event that reports a failed call through a
	// channel that cannot carry a replacement output (Claude's
	// PostToolUseFailure).
	failure bool
}

// Response is what a hook process answers: exactly these bytes on stdout,
// this text on stderr, this exit code.
type Response struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Options change how a host encodes decisions.
type Options struct {
	// Approve makes an allow decided by an explicit rule approve the call
	// where the host can (Claude Code's permissionDecision "allow", Gemini's
	// decision "allow"), skipping the host's own permission prompt. Without
	// it, allow defers to the host's own permission rules.
	Approve bool
	// ApproveCommand is the command a person runs to answer an approval
	// request, named in the refusal of an ask on a host that cannot ask;
	// empty means "celguard approve".
	ApproveCommand string
	// ApproveCommandFor, when set, is the approve command for an event's
	// session, in place of ApproveCommand, and the refusal offers no
	// --always: celguard serve names its URL and the session
	// (`celguard approve --server URL --session ID ...`).
	ApproveCommandFor func(session string) string
	// NoApprovals, when not empty, says why no request is recorded for an
	// ask (celguard serve without an approver token), in place of asking
	// the user to approve the call.
	NoApprovals string
}

// Host decodes one host's events and encodes decisions for it.
type Host interface {
	// Name is the host's name on the command line, e.g. "claude-code".
	Name() string
	// Decode reads one event. It never panics; an error says what is wrong
	// with the input.
	Decode(data []byte) (Event, error)
	// Encode turns a decision about ev into the host's answer. For events
	// that are not calls (KindIgnore, KindTurnStart, ...) d is ignored.
	Encode(ev Event, d eval.Decision) Response
	// Fail answers an event celguard could not decide: what the host
	// honours as a block, or with open what lets the host carry on, with
	// reason on stderr either way. ev may be the zero Event when the input
	// could not be decoded.
	Fail(ev Event, reason string, open bool) Response
}

// stop is the value of a "continue" field that stops the agent: false.
var stop = func() *bool { f := false; return &f }

// maxMessage bounds the strings celguard writes into a host's answer
// (Claude Code caps hook output strings at 10,000 characters).
const maxMessage = 10000

// clip shortens s to at most maxMessage characters.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxMessage {
		return s
	}
	r := []rune(s)
	return string(r[:maxMessage-1]) + "…"
}

// message is the text shown for a decision: the rule's reason, with the
// rule that decided, so that users can find it.
func message(d eval.Decision) string {
	reason := strings.TrimSpace(d.Reason)
	if reason == "" {
		switch d.Verdict {
		case policy.Block, policy.Halt:
			reason = "blocked by policy"
		case policy.Ask:
			reason = "this call needs approval"
		case policy.Modify:
			reason = "rewritten by policy"
		default:
			reason = "policy " + d.Verdict.String()
		}
	}
	var tag []string
	if d.RuleID != "" {
		tag = append(tag, "rule "+d.RuleID)
	}
	if d.Code != "" {
		tag = append(tag, "code "+d.Code)
	}
	if len(tag) == 0 {
		return clip("celguard: " + reason)
	}
	return clip("celguard: " + reason + " (" + strings.Join(tag, ", ") + ")")
}

// NoApprovalNote follows the refusal of an ask that no approval can lift
// (a mandatory rule, or an engine that records no approval requests), on a
// host that cannot ask: retrying is pointless, and the agent is told what
// the person can do instead.
const NoApprovalNote = ", and no approval can let it run from inside this session (the rule is mandatory, or this celguard keeps no requests for approval): do not run it again."

// noApprovalAdvice is what the agent tells the user after NoApprovalNote:
// run the call themselves, or change the rule where it is defined.
func noApprovalAdvice(d eval.Decision) string {
	rule := "the rule"
	if d.RuleID != "" {
		rule = "rule " + d.RuleID
	}
	where := ""
	if d.File != "" {
		where = " (" + d.File
		if d.Line > 0 {
			where += ":" + strconv.Itoa(d.Line)
		}
		where += ")"
	}
	return " Tell the user that celguard needs a person for this call: if it should run, they can run it themselves in their own terminal, outside the agent; to change what " +
		rule + " asks, they can edit it where it is defined" + where + " or ask whoever administers it."
}

// approvalMessage is the block reason for an ask on a host that cannot ask.
// With a pending request (eval.WithApprovalRequests) it names the request
// and the command a person runs to approve it (cmd: "celguard approve"
// when empty), and says what the agent should tell the user.
func approvalMessage(host string, opts Options, session string, d eval.Decision) string {
	if d.Approval == nil || d.Approval.Request == "" {
		if opts.NoApprovals != "" {
			return clip(message(d) + ". This call needs a person's approval and " + host +
				" hooks cannot ask for it, so celguard blocked it, and " + opts.NoApprovals)
		}
		return clip(message(d) + ". This call needs a person's approval and " + host +
			" hooks cannot ask for it, so celguard blocked it" + NoApprovalNote + noApprovalAdvice(d))
	}
	cmd, always := opts.ApproveCommand, ", or --always to also add a permanent allow rule for this exact call to your policies"
	if opts.ApproveCommandFor != nil {
		cmd, always = opts.ApproveCommandFor(session), ""
	}
	if cmd == "" {
		cmd = "celguard approve"
	}
	id := d.Approval.Request
	return clip(fmt.Sprintf("%s. This call needs the user's approval and %s hooks cannot ask for it, so celguard refused it as approval request %s. "+
		"Tell the user: \"celguard asks your approval for this call. To approve this exact call once, run in your own terminal: %s %s "+
		"(or with --session to approve every %s call rule %s asks about for the rest of this session%s).\" "+
		"When the user says it is approved, run the identical call again; a different call is asked again. "+
		"Do not run %s yourself: it refuses inside an agent's tool call.",
		message(d), host, id, cmd, id, d.Tool, d.RuleID, always, cmd))
}

// rewriteMessage is the block reason for a rewrite a host cannot apply.
func rewriteMessage(host string, d eval.Decision, why string) string {
	s := message(d) + ". celguard rewrites this call, but " + why + ", so it was blocked"
	if d.Args != nil {
		if b, err := marshal(d.Args); err == nil {
			s += "; run it again with these arguments instead: " + string(b)
		}
	}
	return clip(s)
}

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// jsonResponse is an exit-0 answer with v as stdout. Encoding cannot fail
// for the wire types of this package; if it ever did, the answer is a
// failure (exit 2), never an empty allow.
//
// The encoder writes marshal's bytes and the newline in one write, into a
// buffer that becomes the answer: one allocation, where marshal's copy and
// the appended newline made three.
func jsonResponse(v any) Response {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return Response{Stderr: "celguard: cannot encode the answer: " + err.Error(), Exit: 2}
	}
	return Response{Stdout: b.Bytes()}
}

// eventProtocol is how a host names its events, for decodeEvent.
type eventProtocol struct {
	// kinds maps event names to what they ask; other events are ignored.
	kinds map[string]Kind
	// failure, when set, is the after event that reports a failed call by
	// its "error" text, with no output to replace (PostToolUseFailure).
	failure string
	// meta are the string fields kept as session metadata, beside host.
	meta []string
	// prompt, when set, is the field of the turn-start event that holds
	// the user's prompt, which the input rules then decide.
	prompt string
	// output, when set, is the string field of the output event that holds
	// the model's whole answer (OpenCode's text); without it the output
	// event is Gemini CLI's AfterModel, read from llm_response.
	output string
}

// exitCodeLine reads Bash's "Exit code N" first error line.
var exitCodeLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Exit code (-?\d+)`) })

// decodeEvent decodes an event of the format Claude Code, Codex and Gemini
// CLI share: hook_event_name, session_id, cwd, and for a call tool_name and
// tool_input, with tool_response after it.
//
// Most events take a shorter way with the same answer (decodeEventFast);
// an event it does not take is decoded here.
func decodeEvent(host string, data []byte, p eventProtocol) (Event, error) {
	if ev, ok := decodeEventFast(host, data, p); ok {
		return ev, nil
	}
	return decodeEventMap(host, data, p)
}

// decodeEventMap is decodeEvent through the event as a map: every event
// decodeEventFast does not take, and the answer it is held to.
func decodeEventMap(host string, data []byte, p eventProtocol) (Event, error) {
	m, err := decodeObject(data)
	if err != nil {
		return Event{}, err
	}
	f, err := strs(m, "hook_event_name", "session_id", "cwd", "tool_name")
	if err != nil {
		return Event{}, err
	}
	ev := Event{Host: host, Name: f[0], SessionID: f[1], Meta: meta(host, m, p.meta...), Cwd: f[2]}
	if ev.Name == "" {
		return Event{}, fmt.Errorf("the event has no hook_event_name")
	}
	ev.Kind = p.kinds[ev.Name] // KindIgnore when absent
	if ev.Kind == KindBefore || ev.Kind == KindAfter || ev.Kind == KindPermission {
		if f[3] == "" {
			return Event{}, fmt.Errorf("%s event without a tool_name", ev.Name)
		}
		a, err := args(m, "tool_input")
		if err != nil {
			return Event{}, err
		}
		ev.Call = eval.Call{Tool: f[3], Args: a, Cwd: f[2]}
		if err := callIdentity(&ev.Call, m, "agent_type", "agent_id"); err != nil {
			return Event{}, err
		}
	}
	if err := decodeModel(&ev, m, p); err != nil {
		return Event{}, err
	}
	if ev.Kind == KindPermission {
		ev.suggestions, _ = m["permission_suggestions"].([]any)
	}
	switch {
	case ev.Kind == KindAfter && ev.Name == p.failure:
		ev.failure = true
		msg, err := str(m, "error")
		if err != nil {
			return Event{}, err
		}
		ev.Result = eval.Result{IsError: true, Content: msg, Fields: map[string]any{}}
		if g := exitCodeLine().FindStringSubmatch(msg); g != nil {
			if n, err := strconv.Atoi(g[1]); err == nil {
				ev.Result.Fields["exit_code"] = float64(n)
			}
		}
		if b, ok := m["is_interrupt"].(bool); ok {
			ev.Result.Fields["is_interrupt"] = b
		}
		if len(ev.Result.Fields) == 0 {
			ev.Result.Fields = nil
		}
	case ev.Kind == KindAfter:
		ev.response = m["tool_response"]
		ev.Result = responseResult(ev.response)
	}
	if err := requireSession(ev, "session_id"); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// callIdentity reads a call's id from the host's tool_use_id (Claude Code,
// Codex, Cursor's preToolUse and postToolUse), the agent's name from the
// field nameKey (Claude Code's agent_type, in a subagent) and its ids from
// idKeys (e.g. agent_id), each under its own name. A field of another type
// than string is an error.
func callIdentity(c *eval.Call, m map[string]any, nameKey string, idKeys ...string) error {
	var err error
	if c.ID, err = str(m, "tool_use_id"); err != nil {
		return err
	}
	if nameKey != "" {
		if c.Agent.Name, err = str(m, nameKey); err != nil {
			return err
		}
	}
	for _, k := range idKeys {
		id, err := str(m, k)
		if err != nil {
			return err
		}
		if id != "" {
			if c.Agent.IDs == nil {
				c.Agent.IDs = map[string]string{}
			}
			c.Agent.IDs[k] = id
		}
	}
	return nil
}

// requireSession fails an event celguard acts on that names no session;
// field is the host's name for the session id.
func requireSession(ev Event, field string) error {
	if ev.Kind != KindIgnore && ev.SessionID == "" {
		return fmt.Errorf("%s event without a %s", ev.Name, field)
	}
	return nil
}

// decodeObject decodes data as one JSON object. Numbers become float64, as
// in eval.Call.
//
// A first pass with github.com/go-json-experiment/json (the staging module
// of Go's encoding/json/v2), under its strict defaults, decodes most events
// in about two thirds of encoding/json's instructions. It only ever
// accepts: an event it refuses for whatever reason (a duplicate name
// anywhere, invalid UTF-8 or a lone surrogate, a number past float64, a
// syntax error) is decoded by encoding/json as before, whose value or
// error is the answer. Within what the first pass accepts the two decode
// to the same value (TestDecodeObjectDifferential, FuzzDecodeObject); an
// event with duplicate names keeps encoding/json's last-one-wins, as the
// hosts' own parsers do.
func decodeObject(data []byte) (map[string]any, error) {
	var v any
	if jsonv2.Unmarshal(data, &v) != nil {
		v = nil
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("the event is not valid JSON: %w", err)
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the event must be a JSON object, not %s", jsonkind.Of(v))
	}
	return m, nil
}

// str reads an optional string field; a field of another type is an error.
func str(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string, not %s", key, jsonkind.Of(v))
	}
	return s, nil
}

// strs reads several optional string fields.
func strs(m map[string]any, keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		s, err := str(m, k)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// args reads a tool input: an object, or absent/null for no arguments.
func args(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return map[string]any{}, nil
	}
	a, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be an object, not %s", key, jsonkind.Of(v))
	}
	return a, nil
}

// meta builds session metadata from the string fields of an event that are
// present, plus the host's name.
func meta(host string, m map[string]any, keys ...string) map[string]any {
	out := map[string]any{"host": host}
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			out[k] = s
		}
	}
	return out
}
