package deadline

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

type key struct{}

// far and past are deadlines that never and always have passed during a
// test: no test here depends on how long anything takes.
var (
	far  = time.Now().Add(24 * time.Hour)
	past = time.Now().Add(-time.Second)
)

// closed says whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestAsWithDeadline drives a Context and context.WithDeadline's context
// through the same random steps (the parent cancelled, Stop or the
// cancel function, Done asked for, a deadline already passed or not) and
// checks that they report the same error after each step and that a Done
// channel, once asked for, is closed exactly when Err is not nil.
func TestAsWithDeadline(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for run := range 2000 {
		d := far
		if r.IntN(3) == 0 {
			d = past
		}
		if r.IntN(2) == 0 {
			d = d.Round(0) // no monotonic reading: Err compares wall clocks
		}
		var parent context.Context = context.WithValue(context.Background(), key{}, run)
		var cancelParent context.CancelFunc = func() {}
		if r.IntN(2) == 0 {
			parent, cancelParent = context.WithCancel(parent)
		}
		if r.IntN(4) == 0 {
			var c2 context.CancelFunc
			parent, c2 = context.WithDeadline(parent, past)
			defer c2()
		}
		ours := New(parent, d)
		std, stop := context.WithDeadline(parent, d)
		var doneOurs, doneStd <-chan struct{}
		for step := range 6 {
			switch r.IntN(4) {
			case 0:
				cancelParent()
			case 1:
				ours.Stop()
				stop()
			case 2:
				doneOurs, doneStd = ours.Done(), std.Done()
			}
			// The standard context's parent may end it asynchronously
			// only when it is not a cancelCtx; here every parent is one,
			// so its error is settled when the step returns.
			if got, want := ours.Err(), std.Err(); !errors.Is(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("run %d step %d: Err %v, context.WithDeadline's %v", run, step, got, want)
			}
			if doneOurs != nil {
				if closed(doneOurs) != (ours.Err() != nil) {
					t.Fatalf("run %d step %d: Done closed %v with Err %v", run, step, closed(doneOurs), ours.Err())
				}
				_ = doneStd
			}
		}
		if ours.Value(key{}) != run {
			t.Fatalf("run %d: Value %v", run, ours.Value(key{}))
		}
		gd, _ := ours.Deadline()
		sd, _ := std.Deadline()
		if !gd.Equal(sd) {
			t.Fatalf("run %d: Deadline %v, context.WithDeadline's %v", run, gd, sd)
		}
		ours.Stop()
		stop()
		cancelParent()
	}
}

// TestFirstErrorKept: once Err has said why the context ended, it says
// the same whatever happens after.
func TestFirstErrorKept(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := New(parent, past)
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline: %v", err)
	}
	cancel()
	c.Stop()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after a cancel and Stop: %v, want the first error", err)
	}
	if !closed(c.Done()) {
		t.Fatal("Done of an ended context is not closed")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after Done: %v", err)
	}

	c = New(context.Background(), far)
	c.Stop()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after Stop: %v", err)
	}
	if !closed(c.Done()) {
		t.Fatal("Done after Stop is not closed")
	}
}

// TestDerivedFollows: a context derived from a Context ends with it, and
// context.AfterFunc runs once it ends.
func TestDerivedFollows(t *testing.T) {
	c := New(context.Background(), far)
	child, cancel := context.WithCancel(c)
	defer cancel()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	if child.Err() != nil || closed(child.Done()) {
		t.Fatal("a child ended before its parent")
	}
	c.Stop()
	<-child.Done() // closed by c's AfterFunc, synchronously or not
	<-ran
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child's Err: %v", child.Err())
	}
}

// TestNoTimerUntilDone: a Context whose Done is never asked for makes no
// timer; Err answers from the clock.
func TestNoTimerUntilDone(t *testing.T) {
	c := New(context.Background(), far)
	if c.Err() != nil {
		t.Fatal("Err before the deadline")
	}
	if c.real != nil {
		t.Fatal("Err made a timer")
	}
	c = New(context.Background(), past)
	if !errors.Is(c.Err(), context.DeadlineExceeded) || c.real != nil {
		t.Fatalf("Err past the deadline: %v (timer %v)", c.Err(), c.real != nil)
	}
	allocs := testing.AllocsPerRun(100, func() {
		*c = Context{parent: context.Background(), deadline: far}
		_ = c.Err()
		_, _ = c.Deadline()
		c.Stop()
	})
	if allocs != 0 {
		t.Fatalf("Err, Deadline and Stop allocate %v times", allocs)
	}
}

// TestErrOnceEnded: callers asking Err while another stops the context,
// or while its parent is cancelled, each see nil and then one error that
// never changes, the same for all of them (Err answers without the lock
// until the context ends).
func TestErrOnceEnded(t *testing.T) {
	for run := range 200 {
		parent, cancel := context.WithCancel(context.Background())
		c := New(parent, far)
		const callers = 4
		seen := make(chan error, callers)
		start := make(chan struct{})
		for range callers {
			go func() {
				<-start
				var first error
				for i := 0; i < 2000 || first == nil; i++ {
					err := c.Err()
					if first == nil {
						first = err
					} else if err != first {
						seen <- errors.Join(errors.New("changed"), first, err)
						return
					}
				}
				seen <- first
			}()
		}
		close(start)
		if run%2 == 0 {
			c.Stop()
		} else {
			cancel()
		}
		// Ended before this call: never nil again (else the callers
		// above would wait for an error forever).
		if err := c.Err(); err != context.Canceled {
			t.Fatalf("run %d: Err after the context ended = %v", run, err)
		}
		var want error
		for range callers {
			err := <-seen
			if want == nil {
				want = err
			}
			if err != want || (err != context.Canceled) {
				t.Fatalf("run %d: a caller saw %v, another %v", run, want, err)
			}
		}
		cancel()
	}
}
