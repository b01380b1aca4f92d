package mcpproxy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/mcpproxy"
)

// subscriptionUpstream is an upstream offering doc://one whose
// subscriptions and unsubscriptions are reported on the channels.
type subscriptionUpstream struct {
	srv                      *mcp.Server
	subscribed, unsubscribed chan string
}

func newSubscriptionUpstream(t *testing.T) (*subscriptionUpstream, func() mcp.Transport) {
	t.Helper()
	u := &subscriptionUpstream{subscribed: make(chan string, 16), unsubscribed: make(chan string, 16)}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "live", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			u.subscribed <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			u.unsubscribed <- req.Params.URI
			return nil
		},
	})
	u.srv.AddResource(&mcp.Resource{URI: "doc://one", Name: "one"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "one"}}}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return u, func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = u.srv.Run(ctx, st) }()
		return ct
	}
}

// none fails when ch holds a value: called once the proxy has done what
// would have sent it.
func none(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s %s", what, v)
	default:
	}
}

// subscribers waits until n client sessions are subscribed to uri (the
// proxy sees a session end when the SDK's server does, in the
// background).
func subscribers(t *testing.T, p *mcpproxy.Proxy, uri string, n int) {
	t.Helper()
	for range 3000 {
		if mcpproxy.Subscribers(p, uri) == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d sessions subscribed to %s, want %d", mcpproxy.Subscribers(p, uri), uri, n)
}

// TestSubscriptionFollowsTheSession: the proxy's upstream subscription to
// a URI lasts while a client session is subscribed to it, and a session
// that ends without unsubscribing is no longer one: with the official
// SDK's client, on the legacy protocol (resources/subscribe) and on the
// current one (subscriptions/listen), a client that subscribes and
// disconnects leaves the upstream unsubscribed; with two clients, the one
// that leaves does not end the other's subscription, which still gets the
// upstream's updates.
func TestSubscriptionFollowsTheSession(t *testing.T) {
	engine := engineConfig(t)
	const doc = "doc://one"
	for _, version := range []string{"2025-11-25", ""} {
		t.Run(fmt.Sprintf("protocol %q", version), func(t *testing.T) {
			up, transport := newSubscriptionUpstream(t)
			p, _ := connect(t, mcpproxy.Config{Name: "live", Upstream: transport, Engine: engine}, nil)
			ctx := context.Background()
			updates := make(chan string, 16)
			client := func() *mcp.ClientSession {
				st, ct := mcp.NewInMemoryTransports()
				sctx, cancel := context.WithCancel(ctx)
				t.Cleanup(cancel)
				go func() { _ = p.Run(sctx, st) }()
				c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
					ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
				})
				var opts *mcp.ClientSessionOptions
				if version != "" {
					opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
				}
				cs, err := c.Connect(ctx, ct, opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}

			// One client subscribes and disconnects.
			a := client()
			if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}); err != nil {
				t.Fatal(err)
			}
			if got := wait(t, up.subscribed, "upstream subscription"); got != doc {
				t.Fatalf("the upstream was subscribed to %s", got)
			}
			subscribers(t, p, doc, 1)
			a.Close()
			if got := wait(t, up.unsubscribed, "upstream unsubscription after the client left"); got != doc {
				t.Fatalf("the upstream was unsubscribed from %s", got)
			}
			subscribers(t, p, doc, 0)

			// Two clients subscribe; the upstream once. The first leaves:
			// the upstream stays subscribed and the second gets its
			// updates. The second leaves: the upstream is unsubscribed.
			b, c := client(), client()
			for _, cs := range []*mcp.ClientSession{b, c} {
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}); err != nil {
					t.Fatal(err)
				}
			}
			wait(t, up.subscribed, "upstream subscription")
			subscribers(t, p, doc, 2)
			none(t, up.subscribed, "the upstream was subscribed twice to")
			b.Close()
			subscribers(t, p, doc, 1)
			none(t, up.unsubscribed, "the upstream was unsubscribed while a client is subscribed, from")
			if err := up.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: doc}); err != nil {
				t.Fatal(err)
			}
			if got := wait(t, updates, "resources/updated at the client still subscribed"); got != doc {
				t.Fatalf("update of %s", got)
			}
			c.Close()
			if got := wait(t, up.unsubscribed, "upstream unsubscription after the last client left"); got != doc {
				t.Fatalf("the upstream was unsubscribed from %s", got)
			}
			subscribers(t, p, doc, 0)
		})
	}
}

// A session that subscribes twice is unsubscribed by one unsubscription,
// as the SDK's server forgets it then: the upstream is unsubscribed, and
// subscribed again by the next subscription.
func TestSubscribeTwiceUnsubscribeOnce(t *testing.T) {
	engine := engineConfig(t)
	up, transport := newSubscriptionUpstream(t)
	p, _ := connect(t, mcpproxy.Config{Name: "live", Upstream: transport, Engine: engine}, nil)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = p.Run(sctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const doc = "doc://one"
	for range 2 {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, up.subscribed, "upstream subscription")
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: doc}); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, up.unsubscribed, "upstream unsubscription"); got != doc {
		t.Fatalf("unsubscribed from %s", got)
	}
	none(t, up.subscribed, "subscribed again to")
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}); err != nil {
		t.Fatal(err)
	}
	wait(t, up.subscribed, "upstream subscription made again")
}

// A client that leaves after the proxy closed does not start the upstream
// again to unsubscribe it: a closed proxy's upstreams stay closed.
func TestNoUpstreamRestartAfterClose(t *testing.T) {
	engine := engineConfig(t)
	up, transport := newSubscriptionUpstream(t)
	var mu sync.Mutex
	starts := 0
	counted := func() mcp.Transport {
		mu.Lock()
		starts++
		mu.Unlock()
		return transport()
	}
	ctx := context.Background()
	p, err := mcpproxy.New(ctx, mcpproxy.Config{Name: "live", Upstream: counted, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = p.Run(sctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "doc://one"}); err != nil {
		t.Fatal(err)
	}
	wait(t, up.subscribed, "upstream subscription")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	subscribers(t, p, "doc://one", 0)
	mu.Lock()
	defer mu.Unlock()
	if starts != 1 {
		t.Fatalf("the upstream was started %d times; once, before the proxy closed", starts)
	}
}
