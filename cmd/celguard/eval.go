package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/input"
	"github.com/celguard/celguard/policy"
)

// evalParams is what `celguard eval` was asked to do.
type evalParams struct {
	policies  selection // --policy, --bundle, --include, --exclude
	trace     bool
	explain   string // "", "text" or "json"
	decisions decisionOptions
	stdio
}

func newEvalCmd(sio stdio) *cobra.Command {
	var p evalParams
	cmd := &cobra.Command{
		Use:   "eval [flags] < CALL_OR_EVENTS",
		Short: "Decide tool calls read from stdin and print each decision as JSON",
		Long: `Eval reads tool calls from stdin, decides them against the policies and
prints each decision as one line of JSON with a top-level "verdict" (allow,
warn, ask, modify, block or halt), the rule that decided, its reason and
code, and for modify the rewritten "args" (before) or "content" (after).

Stdin is either one call:

  {"tool": "Bash", "args": {"command": "ls"}, "cwd": "/repo"}

with optional "session" metadata (visible to rules as session) and an
optional "result" ({"is_error": true, "content": "..."}), which decides the
call after it ran instead of before; or a JSONL stream of events, decided in
order in one session so that counters carry over from event to event:

  {"event": "turn_start"}
  {"event": "before", "tool": "Bash", "args": {...}, "cwd": "/repo"}
  {"event": "after", "tool": "Bash", "args": {...}, "result": {"is_error": true, "content": "..."}}
  {"event": "turn_end"}
  {"event": "input", "messages": [{"role": "user", "content": "...", "name": "..."}]}
  {"event": "output", "output": {"text": "...", "content": {...}}}

A call (or a before or after event) may carry the host's "call_id" and the
"agent" that made it, a name or {"name": ..., "ids": {...}}; rules read them
as call.id and agent, and each decision echoes them. An after event whose
call_id names a call refused before it ran is refused (call_refused).

The first value decides which: a stream starts with an object that has an
"event" key. A stream prints one decision per before, after and turn_end
event; turn_start starts a new turn (turn-scoped counters reset); turn_end
runs the rules of phase turn_end on the turn's counters (phase "turn_end",
tool ""); input and output run the rules of those phases on the messages
about to be sent to the model and on its output (a modify decision carries
the rewritten "messages" or "output"). Unknown fields are
errors. An ask verdict is printed as ask: the caller decides.

A stream survives bad input: a value that is not a valid event (invalid
JSON, an unknown field, a missing tool) gets, in place of a decision, one
line

  {"error": {"code": "invalid_input", "line": 3, "col": 37, "message": "..."}}

on stdout (with --explain=text, a line "invalid_input: stdin:3:37: ..."; the
message goes to stderr too); a line of invalid JSON is skipped to
its end; the stream goes on in the same session, its counters intact. A
single call that is not valid is an error on stderr alone.

--decision-log FILE appends every decision to FILE as one JSON line: its id,
time, policy digest, session, agent, call id, phase, rule, verdict, code,
reason and metadata, with the call's tool and arguments; the arguments the
policies mask (decision_log.mask) and every credential the secret patterns
find are masked (docs/decision-log.md). A decision the log cannot record is
refused (decision_log_failed).

--monitor decides in monitor mode, as if every policy said mode: monitor:
rules are evaluated and the first that would have decided is reported in
the decision's "monitored" ({rule_id, verdict, ...}), but only mandatory
rules (which cannot be monitored away, and keep enforcing: eval says which
on stderr) and the default verdict decide.

With no --policy flag, every layer decides: the recommended built-in bundle
(choose another with --bundle, adjust it with --include and --exclude), the
user's policies ($XDG_CONFIG_HOME/celguard) and the project's (.celguard/ at
the repository root); higher layers win collisions and can disable lower
ones with an Overrides file. With --policy alone, only those files decide;
add --bundle to layer them over the others.

--explain prints, instead of each decision, how it was reached: the rules
in the order they were considered (skipped by the tool matcher, condition
false with the values of the sub-expressions that made it false, error with
the error, the rule that fired and why), the modify rules applied and the
counters with their values for the call. --explain (or --explain=text) is
for people; --explain=json prints one JSON object per decision with the
field names of eval.Explanation (docs/authoring.md). Write the value with
"=": "--explain json" reads json as an argument.

Exit codes: 0 when every call was decided, whatever the verdicts; 2 when
the input is not valid (for a stream: when any value was not, once the
whole stream has been read), a policy path cannot be read or the policies
do not compile (the diagnostics go to stderr).`,
		Example: `  # Decide one call with the built-in policies
  echo '{"tool": "Bash", "args": {"command": "make"}}' | celguard eval

  # Decide with your own policies, showing every rule considered
  celguard eval --policy policies/ --policy extra.yaml --trace < call.json

  # Decide a result after the call ran
  echo '{"tool": "Bash", "args": {"command": "make"}, "result": {"is_error": true, "content": "make: *** error"}}' | celguard eval

  # Replay a session's events
  celguard eval --policy policies/ < events.jsonl

  # Why was this call blocked, and why didn't my rule fire?
  celguard eval --policy policies/ --explain < call.json

  # The same explanation as JSON, one object per call
  celguard eval --policy policies/ --explain=json < events.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "text" || args[0] == "json") && cmd.Flags().Changed("explain") {
				return fmt.Errorf("write --explain=%s, with \"=\" (eval reads calls from stdin and takes no arguments)", args[0])
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.stdio = sio
			return status(runEval(cmd.Context(), p))
		},
	}
	p.policies.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&p.trace, "trace", false, "list every rule considered in each decision's \"trace\"")
	cmd.Flags().StringVar(&p.explain, "explain", "", "explain each decision instead of printing it: text (the default) or json, as --explain=json")
	cmd.Flags().Lookup("explain").NoOptDefVal = "text"
	p.decisions.addFlags(cmd.Flags())
	return cmd
}

func runEval(ctx context.Context, p evalParams) int {
	switch p.explain {
	case "", "text", "json":
	default:
		fmt.Fprintf(p.stderr, "celguard eval: --explain must be text or json, not %q\n", p.explain)
		return exitUsage
	}
	if ctx == nil {
		ctx = context.Background()
	}
	eng, closeGuard, code := evalEngine(ctx, p)
	if eng == nil {
		return code
	}
	defer closeGuard() // the decision log, and the telemetry export's bounded flush
	return (&evalStream{evalParams: p, eng: eng}).run(ctx, input.NewReader(p.stdin, "stdin"))
}

// evalStream decides the events of stdin in one session and prints each
// decision (or its explanation).
type evalStream struct {
	evalParams
	eng       *eval.Engine
	sess      *eval.Session
	explained int // outputs printed, for the blank line between explanations
	bad       int // values that were not valid events
}

// run reads and decides every event; the exit code is exitUsage when a
// value was not valid or a decision could not be made or written.
func (e *evalStream) run(ctx context.Context, r *input.Reader) int {
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			if e.bad > 0 {
				return exitUsage
			}
			return exitOK
		}
		if err != nil {
			if !e.invalid(r, err) {
				return exitUsage
			}
			continue
		}
		if e.sess == nil {
			e.sess = e.eng.NewSession(sessionID(ev.Session), ev.Session)
		}
		if ev.Kind == input.TurnStart {
			e.sess.StartTurn()
			continue
		}
		if !e.decide(ctx, ev) {
			return exitUsage
		}
	}
}

// invalid reports a value that is not a valid event: on stderr, and in a
// stream in place of its decision. It returns false when the error could
// not be written.
func (e *evalStream) invalid(r *input.Reader, err error) bool {
	e.bad++
	fmt.Fprintf(e.stderr, "celguard eval: %v\n", err)
	var ie *input.Error
	if r.Mode() != input.ModeStream || !errors.As(err, &ie) {
		return true
	}
	var werr error
	if e.explain == "text" {
		e.separate()
		_, werr = fmt.Fprintf(e.stdout, "invalid_input: %v\n", err)
	} else {
		werr = output.WriteInputError(e.stdout, output.InputErrorBody{Code: input.CodeInvalidInput, Line: ie.Line, Col: ie.Col, Message: ie.Msg})
	}
	if werr != nil {
		fmt.Fprintf(e.stderr, "celguard eval: cannot write the error: %v\n", werr)
		return false
	}
	return true
}

// separate starts a text explanation: a blank line after the previous
// output.
func (e *evalStream) separate() {
	if e.explained > 0 {
		_, _ = io.WriteString(e.stdout, "\n")
	}
	e.explained++
}

// decide decides one event and prints its decision or explanation. On an
// engine error the decision is still a block: it is printed, so that a
// host reading stdout fails closed, then the error is reported (false).
func (e *evalStream) decide(ctx context.Context, ev input.Event) bool {
	var opts []eval.CallOption
	if e.trace {
		opts = append(opts, eval.WithTrace())
	}
	var x eval.Explanation
	if e.explain != "" {
		opts = append(opts, eval.WithExplain(&x))
	}
	var d eval.Decision
	var err error
	switch ev.Kind {
	case input.Before:
		d, err = e.sess.Before(ctx, ev.Call, opts...)
	case input.After:
		d, err = e.sess.After(ctx, ev.Call, ev.Result, opts...)
	case input.TurnEnd:
		d, err = e.sess.EndTurn(ctx, opts...)
	case input.Input:
		d, err = e.sess.Input(ctx, eval.Input{Messages: ev.Messages, ID: ev.Call.ID, Agent: ev.Call.Agent}, opts...)
	case input.Output:
		d, err = e.sess.Output(ctx, eval.Output{Text: ev.Output.Text, Content: ev.Output.Content, ID: ev.Call.ID, Agent: ev.Call.Agent}, opts...)
	}
	var werr error
	switch e.explain {
	case "text":
		e.separate()
		werr = output.ExplanationText(e.stdout, x)
	case "json":
		e.explained++
		werr = output.ExplanationJSON(e.stdout, x)
	default:
		e.explained++
		werr = output.Decision(e.stdout, d)
	}
	if werr != nil {
		fmt.Fprintf(e.stderr, "celguard eval: cannot write the decision: %v\n", werr)
		return false
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "celguard eval: stdin:%d: the call could not be decided: %v\n", ev.Line, err)
		return false
	}
	return true
}

// evalEngine builds the engine with the composition root; on failure it
// reports why and returns the exit code.
func evalEngine(ctx context.Context, p evalParams) (*eval.Engine, func(), int) {
	fail := func(err error) (*eval.Engine, func(), int) {
		fmt.Fprintf(p.stderr, "celguard eval: %v\n", err)
		return nil, nil, exitUsage
	}
	cfg, err := engineConfig(p.policies, p.decisions)
	if err != nil {
		return fail(err)
	}
	guard, err := cfg.Load(ctx)
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		var srcs []policy.Source
		if d, err := cfg.Select(); err == nil {
			srcs = d.Sources
		}
		_ = output.DiagnosticsText(p.stderr, ds, policy.LinesOf(srcs))
		fmt.Fprintf(p.stderr, "celguard eval: the policies do not compile: %s\n", output.Summary(ds, len(srcs)))
		return nil, nil, exitUsage
	}
	if err != nil {
		return fail(err)
	}
	set := guard.Engine().PolicySet()
	printWarnings(p.stderr, "celguard eval", append(layerWarnings(guard.Discovery(), set), p.decisions.warnings(set)...))
	return guard.Engine(), func() { _ = guard.Close() }, exitOK
}

// noDecisionAudit leaves the decisions' audit record (decision_id, time,
// policy_digest, session_id) out, so that the golden files of the test
// scripts stay stable; only the test binary sets it.
var noDecisionAudit bool

// sessionID is the "id" of the session metadata, or "cli".
func sessionID(meta map[string]any) string {
	if id, ok := meta["id"].(string); ok && id != "" {
		return id
	}
	return "cli"
}
