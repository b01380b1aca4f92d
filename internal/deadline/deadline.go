// Package deadline is a context with a deadline whose timer is made only
// when something waits on it: the deadline of a decision (serve's request
// deadline, eval's store timeout) is read on every request, but it is
// waited on (its Done channel) only by code that blocks, such as a remote
// store or an approver. context.WithDeadline starts a timer, registers
// the new context with its parent and, once Done is called, makes a
// channel, for every request; Context does the same only on its first
// Done or AfterFunc, and otherwise answers Err from the clock.
//
// It has no other home: both eval (the store's timeout) and serve (the
// request's deadline) need it, and it depends on nothing of celguard.
package deadline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Context is a context that ends at a deadline, when its parent ends, or
// when Stop is called, whichever comes first, as context.WithDeadline's
// context does, with the same errors (context.DeadlineExceeded,
// context.Canceled or the parent's error). The first error it reports is
// the one it keeps; when both its deadline had passed and its parent had
// ended before it was first asked (and no Done channel saw which came
// first), it reports the deadline. Its zero value is not usable: make one with New.
type Context struct {
	parent   context.Context
	deadline time.Time

	// settled is set once err or real is: until then Err answers without
	// the lock while the context has not ended, which is every call of a
	// decision that ends in time.
	settled atomic.Bool

	mu     sync.Mutex
	err    error
	real   context.Context // made on the first Done or AfterFunc
	cancel context.CancelFunc
}

// New is a context that ends at d, when parent ends, or when Stop is
// called.
func New(parent context.Context, d time.Time) *Context {
	return &Context{parent: parent, deadline: d}
}

// Deadline is the earlier of the context's deadline and its parent's.
func (c *Context) Deadline() (time.Time, bool) {
	if pd, ok := c.parent.Deadline(); ok && pd.Before(c.deadline) {
		return pd, true
	}
	return c.deadline, true
}

// Value is the parent's value for key.
func (c *Context) Value(key any) any { return c.parent.Value(key) }

// Done is a channel closed when the context ends: the first call makes
// the timer (context.WithDeadline under the parent).
func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.realLocked().Done()
}

// AfterFunc arranges to call f in its own goroutine once the context
// ends, as context.AfterFunc does; stop stops that. Contexts derived from
// c (context.WithCancel and friends) use it to follow c without a
// goroutine of their own.
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	real := c.realLocked()
	c.mu.Unlock()
	return context.AfterFunc(real, f)
}

// realLocked is the context.WithDeadline context the channel comes from,
// made on first use, and ended at once when c has already ended (its
// error stays the one c reported first); the caller holds c.mu.
func (c *Context) realLocked() context.Context {
	if c.real == nil {
		c.real, c.cancel = context.WithDeadline(c.parent, c.deadline)
		c.settled.Store(true)
		if c.err != nil {
			c.cancel()
		}
	}
	return c.real
}

// Err is nil while the context has not ended, and then why it ended:
// context.DeadlineExceeded once the deadline has passed, the parent's
// error once it ended, context.Canceled once Stop was called.
func (c *Context) Err() error {
	// Neither ended when last asked nor given a Done channel: it has
	// still not ended while its deadline is ahead and its parent has not
	// ended, which needs no lock (errLocked would say the same: without a
	// Done channel the error is set only from these, or by Stop, which a
	// caller racing with this one may see either before or after).
	if !c.settled.Load() && time.Until(c.deadline) > 0 && c.parent.Err() == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errLocked()
}

// errLocked is Err; the caller holds c.mu.
func (c *Context) errLocked() error {
	if c.err != nil {
		return c.err
	}
	switch {
	case c.real != nil:
		c.err = c.real.Err()
	case time.Until(c.deadline) <= 0: // !time.Now().Before(c.deadline), reading only the monotonic clock when the deadline has it
		c.err = context.DeadlineExceeded
	case c.parent.Err() != nil:
		c.err = c.parent.Err()
	}
	if c.err != nil {
		c.settled.Store(true)
	}
	return c.err
}

// Stop ends the context (context.Canceled, unless it had already ended)
// and releases its timer, if it made one.
func (c *Context) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errLocked() == nil {
		c.err = context.Canceled
		c.settled.Store(true)
	}
	if c.cancel != nil {
		c.cancel()
	}
}
