package store

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/celguard/celguard/state"
)

// Redis is a store on a Redis or Valkey server (one server, or a primary
// behind a proxy; see docs/store.md for Cluster). An entry is a hash, at
// PREFIX:{SCOPE:ID}, with fields v (its version) and s (the state as
// JSON); the braces are the key's hash tag, so a cluster keeps each entry
// in one slot. Every Commit is one EVALSHA of commitScript: one round trip.
type Redis struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
	// owned says the store made the client (Open), and closes it.
	owned bool
}

// RedisOptions are a Redis store's settings beside its client.
type RedisOptions struct {
	// Prefix starts every key; "" means "celguard".
	Prefix string
	// TTL is how long an entry is kept after its last use; zero means
	// DefaultTTL.
	TTL time.Duration
}

// NewRedis is a store on a caller's client: a *redis.Client, a
// *redis.ClusterClient (an entry's keys share a hash tag) or a failover
// client, configured as the caller's deployment needs (TLS, credentials,
// pools, instrumentation). The client should bound a command by its
// context (ContextTimeoutEnabled), since a decision's deadline
// (eval.WithStoreTimeout) is its context's. The store does not close the
// client, and changes nothing process-wide (go-redis's logger included).
func NewRedis(client redis.UniversalClient, opts RedisOptions) *Redis {
	r := &Redis{client: client, prefix: opts.Prefix, ttl: opts.TTL}
	if r.prefix == "" {
		r.prefix = "celguard"
	}
	if r.ttl <= 0 {
		r.ttl = DefaultTTL
	}
	return r
}

// commitScript checks every key's version (ARGV[2+4(i-1)], "" for an
// absent key) and, when all match, writes the keys whose mode is w
// (expiring) or p (persistent) with their new version and state; a key
// only checked has its expiry refreshed, unless it has none. ARGV[1] is the
// expiry in milliseconds. It answers {1, version, "", ...} or, when a
// version does not match, {0, version, state, ...} of every key.
const commitScript = `
local ttl = tonumber(ARGV[1])
local n = #KEYS
for i = 1, n do
  local v = redis.call('HGET', KEYS[i], 'v') or ''
  if v ~= ARGV[4*i-2] then
    local out = {0}
    for j = 1, n do
      local r = redis.call('HMGET', KEYS[j], 'v', 's')
      out[#out+1] = r[1] or ''
      out[#out+1] = r[2] or ''
    end
    return out
  end
end
local out = {1}
for i = 1, n do
  local base = 4*i-2
  local mode = ARGV[base+1]
  if mode == 'c' then
    out[#out+1] = ARGV[base]
    if ARGV[base] ~= '' and redis.call('PTTL', KEYS[i]) > 0 then
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  else
    redis.call('HSET', KEYS[i], 'v', ARGV[base+2], 's', ARGV[base+3])
    out[#out+1] = ARGV[base+2]
    if mode == 'p' then
      redis.call('PERSIST', KEYS[i])
    else
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  end
  out[#out+1] = ''
end
return out
`

var commit = redis.NewScript(commitScript)

// quietOnce silences go-redis's own logger (a line on stderr per failed
// dial, outside the server's structured logs) for a store Open opens from a
// URL, the command line's way: a store fault is reported by the decisions
// it blocks (store_unavailable) and by the errors Commit returns. The
// logger is process-wide, so NewRedis, for embedders, leaves it alone.
var quietOnce sync.Once

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// openRedis opens a redis://, rediss://, valkey:// or valkeys:// URL, with
// a client of its own.
func openRedis(ctx context.Context, rawURL string) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %v", Redact(rawURL), err)
	}
	switch strings.ToLower(u.Scheme) {
	case "valkey":
		u.Scheme = "redis"
	case "valkeys":
		u.Scheme = "rediss"
	}
	q := u.Query()
	ttl, err := ttlOf(q)
	if err != nil {
		return nil, err
	}
	prefix := "celguard"
	if q.Has("prefix") {
		prefix = q.Get("prefix")
	}
	q.Del("ttl")
	q.Del("prefix")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %v", Redact(rawURL), err)
	}
	// A decision's deadline bounds its round trip (eval.WithStoreTimeout),
	// and a server that is down is found out at once, not after retries.
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = 1
	opts.DialerRetries = 1
	opts.DisableIdentity = true
	if opts.DialTimeout == 0 || opts.DialTimeout > time.Second {
		opts.DialTimeout = time.Second
	}
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	r := &Redis{client: redis.NewClient(opts), prefix: prefix, ttl: ttl, owned: true}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.client.Ping(pctx).Err(); err != nil {
		r.client.Close()
		return nil, fmt.Errorf("store %s: %w", Redact(rawURL), err)
	}
	return r, nil
}

// Key is the Redis key of an entry.
func (r *Redis) Key(k state.Key) string {
	return r.prefix + ":{" + k.Scope.String() + ":" + k.ID + "}"
}

// Commit implements state.Store: one script, one round trip.
func (r *Redis) Commit(ctx context.Context, ops []state.Op) (bool, []state.Entry, error) {
	keys := make([]string, len(ops))
	args := make([]any, 1, 1+4*len(ops))
	args[0] = strconv.FormatInt(r.ttl.Milliseconds(), 10)
	for i, op := range ops {
		keys[i] = r.Key(op.Key)
		mode, nv, data := "c", "", ""
		if op.Write != nil {
			mode, nv, data = "w", newVersion(), string(op.Write)
			if op.Persistent {
				mode = "p"
			}
		}
		args = append(args, op.Version, mode, nv, data)
	}
	res, err := commit.Run(ctx, r.client, keys, args...).Slice()
	if err != nil {
		return false, nil, err
	}
	if len(res) != 1+2*len(ops) {
		return false, nil, fmt.Errorf("the commit script answered %d values for %d entries", len(res), len(ops))
	}
	ok, _ := res[0].(int64)
	out := make([]state.Entry, len(ops))
	for i := range ops {
		v, _ := res[1+2*i].(string)
		s, _ := res[2+2*i].(string)
		out[i].Version = v
		if ok == 0 && v != "" {
			out[i].State = []byte(s)
		}
	}
	return ok == 1, out, nil
}

// Delete implements state.Store.
func (r *Redis) Delete(ctx context.Context, key state.Key) error {
	return r.client.Del(ctx, r.Key(key)).Err()
}

// Close implements state.Store: it closes the client the store made (Open),
// never a caller's (NewRedis).
func (r *Redis) Close() error {
	if !r.owned {
		return nil
	}
	return r.client.Close()
}

// Ping checks the server answers.
func (r *Redis) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }
