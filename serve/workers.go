package serve

import (
	"context"
	"sync/atomic"
)

// maxWorkers bounds the goroutines kept waiting for decisions.
const maxWorkers = 512

// workers run decisions on long-lived goroutines, so that a request can
// stop waiting at its deadline whatever the decision does, without a new
// goroutine per decision: a new goroutine starts with a small stack, and
// growing it to the depth of a CEL evaluation costs more than the
// evaluation itself.
type workers struct {
	jobs chan func()
	n    atomic.Int32
}

func newWorkers() *workers { return &workers{jobs: make(chan func())} }

// start runs fn on an idle worker, on a new one while there are fewer than
// maxWorkers, or on a goroutine of its own.
func (w *workers) start(fn func()) {
	select {
	case w.jobs <- fn:
		return
	default:
	}
	if w.n.Add(1) <= maxWorkers {
		go w.loop(fn)
		return
	}
	w.n.Add(-1)
	go fn()
}

func (w *workers) loop(fn func()) {
	fn()
	for fn := range w.jobs {
		fn()
	}
}

// run runs fn on a worker and waits for it until ctx ends; ok is false when
// ctx ended first (fn goes on, its result unused). fn must not panic: the
// callers recover inside it.
func (w *workers) run(ctx context.Context, fn func()) (ok bool) {
	done := make(chan struct{})
	w.start(func() {
		defer close(done)
		fn()
	})
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
