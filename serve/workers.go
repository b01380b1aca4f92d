package serve

import (
	"context"
	"sync"
	"sync/atomic"
)

// maxWorkers bounds the goroutines kept waiting for decisions.
const maxWorkers = 512

// workers run the daemon's work on long-lived goroutines (its JSON-RPC
// connections, and its HTTP route's decisions through run), and the
// session API's and the hook endpoints' decisions over HTTP/2 (over
// HTTP/1 those decide on the request's goroutine instead, with ontime),
// so that a request can stop waiting at its deadline whatever the
// decision does, without a new goroutine per decision: a new goroutine
// starts with a small stack, and growing it to the depth of a CEL
// evaluation costs more than the evaluation itself.
type workers struct {
	jobs chan job
	n    atomic.Int32
}

// job is one piece of work for a worker. run must not panic (the jobs
// recover inside it) and must signal its waiter last: once it has, the
// waiter may reuse the job.
type job interface{ run() }

func newWorkers() *workers { return &workers{jobs: make(chan job)} }

// start runs j on an idle worker, on a new one while there are fewer than
// maxWorkers, or on a goroutine of its own.
func (w *workers) start(j job) {
	select {
	case w.jobs <- j:
		return
	default:
	}
	if w.n.Add(1) <= maxWorkers {
		go w.loop(j)
		return
	}
	w.n.Add(-1)
	go j.run()
}

func (w *workers) loop(j job) {
	j.run()
	for j := range w.jobs {
		j.run()
	}
}

// wait waits for done until ctx ends; false when ctx ended first.
func wait(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// funcJob is a job running a function, with the channel it signals when
// the function returned: buffered, so that the worker never waits for a
// waiter that gave up, and reused through funcJobs by the waiters that
// saw it (a job whose waiter gave up is never reused: its worker may still
// hold it).
type funcJob struct {
	fn   func()
	done chan struct{}
}

var funcJobs = sync.Pool{New: func() any { return &funcJob{done: make(chan struct{}, 1)} }}

func (j *funcJob) run() {
	j.fn()
	j.done <- struct{}{}
}

// run runs fn on a worker and waits for it until ctx ends; ok is false when
// ctx ended first (fn goes on, its result unused). fn must not panic: the
// callers recover inside it.
func (w *workers) run(ctx context.Context, fn func()) (ok bool) {
	j := funcJobs.Get().(*funcJob)
	j.fn = fn
	w.start(j)
	if !wait(ctx, j.done) {
		return false
	}
	j.fn = nil
	funcJobs.Put(j)
	return true
}
