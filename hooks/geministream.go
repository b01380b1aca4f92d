package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// Gemini CLI streams the model's answer and sends each chunk to the
// AfterModel hook on its own, showing what the hook returns before the next
// chunk arrives. Deciding each chunk alone misses a secret split across
// chunks, so the hook decides across them: it keeps a record of the answer
// being streamed (the text so far and the text released so far) in the
// session's signed state file, under the key gemini_stream
// (eval.SessionState.Stream, committed with the session's state through the
// engine's store, opaque to the engine). On each chunk it appends the chunk's text, decides the
// output rules on the whole answer so far, and releases only the decided
// text at least StreamHold bytes behind its end (the secret scanner's
// longest match and one character), answering the chunk with the newly
// released slice in place of its text (possibly empty: Gemini CLI takes a
// response whose one part is "" and shows nothing). A chunk with a
// finishReason releases the rest. A block or halt denies the chunk (Gemini
// discards the response) and forgets the record; so does every other event
// of the session (the next BeforeModel, BeforeTool, AfterAgent...), since
// only consecutive AfterModel chunks carry it.
//
// A chunk without text (a tool call: the hook's event carries text parts
// only, so a replaced chunk would lose the call) passes unchanged; when it
// ends the answer, the text still held back is not shown in the terminal
// (the model's own history, built by Gemini from the original chunks,
// keeps it).

// StreamHold is how many bytes of the decided answer the AfterModel hook
// holds back until the next chunk or the end of the answer: the longest
// match of the secret scanner (8,192 bytes, stdlib/secrets.go) and the one
// character (at most utf8.UTFMax bytes) it reads past a match, so that a
// secret still arriving is whole in the text decided before a byte of it
// is released.
const StreamHold = 8192 + utf8.UTFMax

// MaxStreamBytes bounds the answer a session's record keeps: an answer
// longer than this is blocked with CodeStreamTooLong (fail closed) rather
// than decided on a part.
const MaxStreamBytes = 128 << 10

// CodeStreamTooLong is the code of the block of a streamed answer longer
// than MaxStreamBytes.
const CodeStreamTooLong = "model_output_too_long"

// CodeStreamRewritten is the code of the block of a streamed answer whose
// rewrite changed text already released (a rule whose rewrite reaches
// further back than StreamHold): what the user saw cannot be taken back, so
// the rest is refused.
const CodeStreamRewritten = "model_output_rewritten_released"

// streamRecord is the answer being streamed: Text, the model's text so
// far; Released, the decided text already released.
type streamRecord struct {
	Text     string `json:"text"`
	Released string `json:"released"`
}

// streams reports whether the runner decides ev across chunks.
func (r *Runner) streams(ev Event) bool {
	return ev.Kind == KindOutput && r.Host.Name() == Gemini
}

// loadStream reads the record kept in the session's state
// (eval.SessionState.Stream); none when there is none or it does not
// decode (a tampered state restores without one).
func loadStream(sess *eval.Session) *streamRecord {
	raw := sess.Stream()
	if raw == nil {
		return nil
	}
	var rec streamRecord
	if json.Unmarshal(raw, &rec) != nil {
		return nil
	}
	return &rec
}

// saveStream keeps the record rec in the session's state, committed with
// it (nil: none, which forgets a record kept before).
func saveStream(ctx context.Context, sess *eval.Session, rec *streamRecord) error {
	var raw json.RawMessage
	if rec != nil {
		var err error
		if raw, err = json.Marshal(rec); err != nil {
			return fmt.Errorf("cannot encode the streamed answer's record: %w", err)
		}
	}
	if raw == nil && sess.Stream() == nil {
		return nil
	}
	return sess.SetStream(ctx, raw)
}

// decideStream decides the chunk ev with the record rec (nil: a new
// answer) and returns the decision to encode, with ev.Output.Text set to
// the slice to release, and the record to keep (nil when the answer ended
// or was refused).
func decideStream(ctx context.Context, sess *eval.Session, ev *Event, rec *streamRecord) (eval.Decision, *streamRecord, error) {
	if ev.Output == nil {
		return eval.Decision{}, nil, fmt.Errorf("the %s event has no model output", ev.Name)
	}
	if rec == nil {
		rec = &streamRecord{}
	}
	chunk := ev.Output.Text
	ev.chunk = &chunk
	if chunk == "" {
		// Nothing to decide, and nothing may be released in its place
		// (it may carry a tool call): it passes unchanged.
		if ev.finished() {
			return eval.Decision{Phase: policy.PhaseOutput, Verdict: policy.Allow}, nil, nil
		}
		return eval.Decision{Phase: policy.PhaseOutput, Verdict: policy.Allow}, rec, nil
	}
	full := rec.Text + chunk
	if len(full) > MaxStreamBytes {
		return eval.Refusal(policy.PhaseOutput, "", CodeStreamTooLong, fmt.Sprintf("celguard: the model's answer is longer than %d bytes, the most the Gemini CLI hook decides across chunks; it was refused", MaxStreamBytes)), nil, nil
	}
	whole := *ev.Output
	whole.Text = full
	d, err := Decide(ctx, sess, Event{Name: ev.Name, Kind: KindOutput, Output: &whole, response: ev.response})
	if err != nil {
		return d, nil, err
	}
	decided := full
	switch d.Verdict {
	case policy.Allow, policy.Warn:
	case policy.Modify:
		if d.Output == nil {
			return d, nil, nil // refused by model()
		}
		decided = d.Output.Text
	default:
		return d, nil, nil
	}
	if len(decided) < len(rec.Released) || decided[:len(rec.Released)] != rec.Released {
		return eval.Refusal(policy.PhaseOutput, "", CodeStreamRewritten, "celguard: "+message(d)+": the rewrite changes text of the answer already shown, so the rest of the answer was refused"), nil, nil
	}
	cut := len(decided)
	finished := ev.finished()
	if !finished {
		cut = max(len(rec.Released), len(decided)-StreamHold)
		for cut > len(rec.Released) && !utf8.RuneStart(decided[cut]) {
			cut--
		}
	}
	ev.Output.Text = decided[len(rec.Released):cut]
	if d.Verdict == policy.Modify {
		// Answered as a rewrite of the chunk: the text to show.
		d.Output = &eval.ModelOutput{Text: ev.Output.Text}
	}
	if finished {
		return d, nil, nil
	}
	return d, &streamRecord{Text: full, Released: decided[:cut]}, nil
}

// finished reports whether the chunk ends the answer: a candidate of it
// carries a finishReason.
func (ev Event) finished() bool {
	resp, _ := ev.response.(map[string]any)
	cands, _ := resp["candidates"].([]any)
	for _, c := range cands {
		cm, _ := c.(map[string]any)
		if fr, ok := cm["finishReason"]; ok && fr != nil && fr != "" {
			return true
		}
	}
	return false
}
