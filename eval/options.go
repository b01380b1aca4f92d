package eval

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/celguard/celguard/state"
)

// Defaults of the bounds a session keeps.
const (
	DefaultMaxCounterKeys  = 4096
	DefaultMaxWindowEvents = 4096
	DefaultMaxApprovals    = 4096
)

// Option configures an Engine. Options validate their arguments.
type Option func(*config) error

type config struct {
	approver        Approver
	requests        bool
	judges          map[string]Judge
	judgeTimeout    time.Duration
	now             func() time.Time
	maxCounterKeys  int
	maxWindowEvents int
	// auditIDs, when set (WithDecisionMetadata), makes every decision's
	// id; nil leaves the audit fields empty.
	auditIDs func() string
	// sink receives every decision (WithDecisionSink); sinkError its
	// errors, nil to fail closed.
	sink      DecisionSink
	sinkError func(error)
	// monitorAll monitors every rule that is not mandatory (WithMonitor).
	monitorAll bool
	// store, when set, keeps the session state (fleet.go).
	store        state.Store
	storeTimeout time.Duration
	storeRetries int
}

// WithDecisionMetadata fills every decision's audit record: DecisionID (a
// random 128-bit id in 32 hex digits), Time (from the engine's clock,
// WithClock, in UTC), PolicyDigest and SessionID. Without it they stay
// empty, so that output compared byte for byte (goldens) is stable.
func WithDecisionMetadata() Option {
	return func(c *config) error {
		if c.auditIDs == nil {
			c.auditIDs = randomID
		}
		return nil
	}
}

// WithDecisionIDs is WithDecisionMetadata with ids from next instead of
// random ones (for tests, or a host with its own scheme, e.g. ULIDs). next
// is called once per decision, possibly concurrently.
func WithDecisionIDs(next func() string) Option {
	return func(c *config) error {
		if next == nil {
			return errors.New("eval.WithDecisionIDs: nil id source")
		}
		c.auditIDs = next
		return nil
	}
}

// randomID is a random 128-bit id in 32 lowercase hex digits.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// WithMonitor monitors every rule that is not mandatory, as if each policy
// said mode: monitor (decide.go, rule 16): the rules are evaluated and the
// first that matches is reported in Decision.Monitored, but only the
// mandatory rules and the default verdict decide. Mandatory rules keep
// enforcing.
func WithMonitor() Option {
	return func(c *config) error {
		c.monitorAll = true
		return nil
	}
}

// WithApprover sets who settles ask verdicts. Without one, ask is a block
// with code approval_required.
func WithApprover(a Approver) Option {
	return func(c *config) error {
		c.approver = a
		return nil
	}
}

// WithApprovalRequests records every ask that is deferred to the host or
// that no approver could settle as a pending Request of the session, named
// in Decision.Approval.Request, for a person to answer later
// (Session.Approve, SessionState.Approve; docs/approvals.md). Asks of
// mandatory rules make no request: no approval lifts them.
func WithApprovalRequests() Option {
	return func(c *config) error {
		c.requests = true
		return nil
	}
}

// WithClock sets the clock window counters read; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("eval.WithClock: nil clock")
		}
		c.now = now
		return nil
	}
}

// WithMaxCounterKeys bounds how many keys each counter keeps per session;
// past it, the least recently touched key is forgotten.
func WithMaxCounterKeys(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("eval.WithMaxCounterKeys: the bound must be positive, got %d", n)
		}
		c.maxCounterKeys = n
		return nil
	}
}

// WithMaxWindowEvents bounds how many event times a window counter keeps per
// key; a window count saturates at this bound.
func WithMaxWindowEvents(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("eval.WithMaxWindowEvents: the bound must be positive, got %d", n)
		}
		c.maxWindowEvents = n
		return nil
	}
}
