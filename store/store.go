// Package store holds the state stores that keep celguard's session state
// outside one engine (state.Store), and opens them from a URL:
//
//	memory:                      in this process (the default)
//	file:///srv/app/state        the hook state files (package statedir), signed, one per session
//	redis://host:6379/0          Redis, through go-redis; rediss:// with TLS
//	valkey://host:6379/0         Valkey (the same protocol); valkeys:// with TLS
//
// Redis and Valkey URLs take go-redis's options (user, password, database,
// dial_timeout, ...) and two of celguard's: ttl (how long an entry is kept
// after its last use, a Go duration, default 24h) and prefix (of every key,
// default "celguard"). docs/store.md describes the keys, their expiry and
// what fails closed.
//
// Redis and Valkey stores are also made on a caller's client (NewRedis).
//
// It is a package of its own because it is the one place that knows every
// implementation: the protocol (package state) is a leaf the evaluator and
// the stores share, and no store imports the evaluator or the hooks. The
// decision service (celguard serve) opens its store here and hands it to
// the engine with eval.WithStore; it never speaks to Redis itself.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/celguard/celguard/state"
)

// DefaultTTL is how long an entry is kept after its last use.
const DefaultTTL = 24 * time.Hour

// Open opens the store a URL names (see the package doc); "" is memory:.
// A Redis or Valkey store is pinged, so that a wrong address is an error
// here rather than at the first decision.
func Open(ctx context.Context, rawURL string) (state.Store, error) {
	if rawURL == "" || rawURL == "memory:" || rawURL == "memory://" {
		return NewMemory(DefaultTTL), nil
	}
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, fmt.Errorf("store URL %q has no scheme: use memory:, file:///DIR, redis://HOST:PORT/DB or valkey://HOST:PORT/DB", Redact(rawURL))
	}
	switch strings.ToLower(scheme) {
	case "memory":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("store URL %q: %v", Redact(rawURL), err)
		}
		ttl, err := ttlOf(u.Query())
		if err != nil {
			return nil, err
		}
		return NewMemory(ttl), nil
	case "file":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("store URL %q: %v", Redact(rawURL), err)
		}
		if u.Path == "" || u.Host != "" {
			return nil, fmt.Errorf("store URL %q: a file store is file:///ABSOLUTE/DIR", rawURL)
		}
		return NewFile(u.Path), nil
	case "redis", "rediss", "valkey", "valkeys":
		return openRedis(ctx, rawURL)
	}
	return nil, fmt.Errorf("store URL %q: unknown scheme %q: use memory:, file:///DIR, redis://, rediss://, valkey:// or valkeys://", Redact(rawURL), scheme)
}

// Redact is a store URL with its password replaced by "xxxxx", to show.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unreadable URL)"
	}
	return u.Redacted()
}

// ttlOf reads the ttl query parameter.
func ttlOf(q url.Values) (time.Duration, error) {
	v := q.Get("ttl")
	if v == "" {
		return DefaultTTL, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("store URL: ttl must be a positive duration such as 24h, not %q", v)
	}
	return d, nil
}

// newVersion is a fresh version: random, so that an entry that expired and
// was made again never takes a version a replica still holds.
func newVersion() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}
