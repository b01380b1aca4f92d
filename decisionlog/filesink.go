package decisionlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/logfile"
)

// FileSinkOptions configures a FileSink.
type FileSinkOptions struct {
	// MaxBytes bounds the file before it rotates to FILE.1 (zero: 64 MiB;
	// negative: never rotate).
	MaxBytes int64
	// Sync makes each line durable (fsync) before the decision is
	// returned; without it a crash of the machine may lose the last lines.
	Sync bool
	// Who, when set, is written in every record (Record.Who).
	Who *Who
}

// FileSink writes each decision as one JSON line to a file: appended with
// one write under a lock, so that many processes (every hook process of a
// machine) can share one log without interleaving lines; past its size
// bound the file moves to FILE.1 (replacing the previous one) and a new
// one starts. The file is created with mode 0600.
type FileSink struct {
	f   *logfile.File
	who *Who
}

// NewFileSink opens (or creates) the log at path.
func NewFileSink(path string, opts FileSinkOptions) (*FileSink, error) {
	f, err := logfile.Open(path, logfile.Options{MaxBytes: opts.MaxBytes, Sync: opts.Sync})
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return &FileSink{f: f, who: opts.Who}, nil
}

// WriteDecision implements eval.DecisionSink: the decision's masked
// Record, as one JSON line.
func (s *FileSink) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	rec := NewRecord(ev)
	rec.Who = s.who
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	if err := s.f.Append(b.Bytes()); err != nil {
		return fmt.Errorf("decision log %s: %w", s.f.Path(), err)
	}
	return nil
}
