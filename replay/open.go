package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Format is a record format replay reads.
type Format string

// The formats. Each reader's doc says which host version it was derived
// from.
const (
	// FormatClaudeCode is Claude Code's project transcript
	// (~/.claude/projects/PROJECT/SESSION.jsonl).
	FormatClaudeCode Format = "claude-code"
	// FormatCodex is Codex's session rollout
	// (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl).
	FormatCodex Format = "codex"
	// FormatGemini is Gemini CLI's saved chat
	// (~/.gemini/tmp/PROJECT/chats/session-*.jsonl).
	FormatGemini Format = "gemini"
	// FormatDecisionLog is celguard's decision log (--decision-log).
	FormatDecisionLog Format = "decision-log"
	// FormatEvents is the JSONL event stream `celguard eval` reads.
	FormatEvents Format = "events"
)

// Formats lists every format, for help texts and errors.
var Formats = []Format{FormatClaudeCode, FormatCodex, FormatGemini, FormatDecisionLog, FormatEvents}

// NewReader reads r in format f; name is what positions call the file.
func NewReader(f Format, name string, r io.Reader) (Reader, error) {
	l := newLines(name, r)
	switch f {
	case FormatClaudeCode:
		return newClaudeReader(l), nil
	case FormatCodex:
		return newCodexReader(l), nil
	case FormatGemini:
		return newGeminiReader(l), nil
	case FormatDecisionLog:
		return newDecisionLogReader(l), nil
	case FormatEvents:
		return newEventsReader(l), nil
	}
	return nil, fmt.Errorf("unknown record format %q (replay reads %v)", f, Formats)
}

// Detect reads the first record of r and returns the format it is in and
// a Reader of the whole of r in that format. A file whose first record is
// in no format replay reads is an *Error with CodeUnknownFormat.
func Detect(name string, r io.Reader) (Format, Reader, error) {
	l := newLines(name, r)
	b, line, err := l.next()
	if errors.Is(err, io.EOF) {
		// An empty file holds no events, in any format.
		return FormatEvents, newEventsReader(l), nil
	}
	if err != nil {
		return "", nil, err
	}
	f, ok := detect(b)
	if !ok {
		return "", nil, l.errorf(line, CodeUnknownFormat, "the first record is in none of the formats replay reads (%v)", Formats)
	}
	l.unread()
	rd, err := NewReader(f, name, nil)
	if err != nil {
		return "", nil, err
	}
	setLines(rd, l)
	return f, rd, nil
}

// setLines points a reader NewReader made at l, which has read ahead.
func setLines(r Reader, l *lines) {
	switch r := r.(type) {
	case *lineReader:
		r.l = l
	case *eventsReader:
		r.l = l
	}
}

// detect names the format of a first record.
func detect(b []byte) (Format, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return "", false
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				return false
			}
		}
		return true
	}
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	switch {
	case has("decision_id", "phase", "verdict"):
		return FormatDecisionLog, true
	case has("event"):
		return FormatEvents, true
	case has("timestamp", "type", "payload"):
		return FormatCodex, true
	case has("sessionId", "projectHash"):
		return FormatGemini, true
	case typ != "" && (has("sessionId") || slices.Contains(claudeIgnored, typ) || typ == "user" || typ == "assistant"):
		return FormatClaudeCode, true
	}
	return "", false
}

// File is one record file opened for replay.
type File struct {
	Reader
	Format Format
	f      *os.File
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Open opens a record file and detects its format (format "": from its
// first record).
func Open(path string, format Format) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Pos: Pos{File: path}, Code: CodeUnreadable, Msg: err.Error()}
	}
	var r Reader
	if format == "" {
		format, r, err = Detect(path, f)
	} else {
		r, err = NewReader(format, path, f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{Reader: r, Format: format, f: f}, nil
}
