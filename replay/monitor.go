package replay

import (
	"context"
	"errors"
	"io"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
)

// MonitorReport reports what the monitored rules of a decision log written
// in monitor mode (--monitor, or policies with mode: monitor) would have
// decided, without deciding anything again: each record's "monitored"
// decision where it has one, its own decision otherwise (a mandatory
// rule's, or the default verdict). RanRefused lists the calls that ran
// while a monitored rule would have refused them: what enforcing the
// policy would change. The files are read as decision logs.
func MonitorReport(ctx context.Context, paths []string, progress func(Progress)) (*Report, error) {
	files, err := Files(paths)
	if err != nil {
		return nil, err
	}
	t := newTally(progress)
	t.r.Monitor = true
	t.p.TotalFiles = len(files)
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := Open(path, FormatDecisionLog)
		if err != nil {
			if e, ok := err.(*Error); ok {
				t.readError(e)
				t.fileDone()
				continue
			}
			return nil, err
		}
		for {
			ev, err := f.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				var re *Error
				if !errors.As(err, &re) {
					f.Close()
					return nil, err
				}
				t.readError(re)
				continue
			}
			if ev.Live == nil {
				t.add(path, ev, nil, nil)
				continue
			}
			rec := wouldBe(ev.Live)
			d := eval.Decision{Phase: rec.Phase, Verdict: rec.Verdict, RuleRef: rec.RuleRef, Code: rec.Code}
			t.add(path, ev, &d, func() *decisionlog.Record { return rec })
			t.tick()
		}
		f.Close()
		t.fileDone()
	}
	return t.report(), nil
}

// wouldBe is the record as the monitored rule would have decided it.
func wouldBe(live *decisionlog.Record) *decisionlog.Record {
	m := live.Monitored
	if m == nil {
		return live
	}
	rec := *live
	rec.Verdict, rec.RuleRef, rec.Code, rec.Reason, rec.Metadata = m.Verdict, m.RuleRef, m.Code, m.Reason, m.Metadata
	return &rec
}
