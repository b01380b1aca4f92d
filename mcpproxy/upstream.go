package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is one server behind the proxy and its connection, started
// again after a failure.
type upstream struct {
	p         *Proxy
	name      string
	transport func() mcp.Transport

	mu      sync.Mutex
	session *mcp.ClientSession // nil after a failure, until the next request
	closed  bool               // the proxy closed: never started again (live)

	refresh sync.Mutex // held while what up offers is listed again (sync.go)
}

// errToolChanged: the restarted upstream changed the called tool.
var errToolChanged = errors.New(CodeToolChanged)

func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, error) {
	// The handlers run in the session's reading loop: the work goes apart.
	c := mcp.NewClient(&mcp.Implementation{Name: "celguard-mcp-proxy", Version: u.p.cfg.Version}, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { go u.p.changed(u, kindTools) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { go u.p.changed(u, kindResources) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { go u.p.changed(u, kindPrompts) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				go u.p.updated(u, req.Params)
			}
		},
	})
	cctx, cancel := context.WithTimeout(ctx, u.p.cfg.CallTimeout)
	defer cancel()
	cs, err := c.Connect(cctx, u.transport(), nil)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: connecting to %s: %w", u.name, err)
	}
	return cs, nil
}

// listTools lists every tool of cs.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// live returns the upstream session, starting the upstream again after a
// failure (and checking its tools against the pins before any request
// reaches it).
func (u *upstream) live(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session != nil {
		return u.session, nil
	}
	if u.closed {
		// A request after Close (a client that leaves at shutdown is
		// unsubscribed, subscribe.go) starts no upstream process again.
		return nil, errors.New("the proxy is closed")
	}
	cs, err := u.connect(ctx)
	if err != nil {
		return nil, err
	}
	if u.p.pins != nil {
		lctx, cancel := context.WithTimeout(ctx, u.p.cfg.CallTimeout)
		tools, err := listTools(lctx, cs)
		cancel()
		if err != nil {
			go cs.Close()
			return nil, fmt.Errorf("listing the tools of the restarted server: %w", err)
		}
		if _, err := u.p.pins.check(u.name, tools); err != nil {
			go cs.Close()
			return nil, err
		}
	}
	u.session = cs
	go u.p.resubscribe(u, cs)
	return cs, nil
}

// drop forgets a failed upstream session (unless another request already
// replaced it) and stops it.
func (u *upstream) drop(cs *mcp.ClientSession) {
	u.mu.Lock()
	if u.session == cs {
		u.session = nil
	}
	u.mu.Unlock()
	go cs.Close()
}

func (u *upstream) close() error {
	u.mu.Lock()
	cs := u.session
	u.session, u.closed = nil, true
	u.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Close()
}

// do runs one request upstream within CallTimeout; a failure drops the
// upstream session, so that the next request starts a new one. A result
// that is nil with no error is a failure too.
func do[R any](ctx context.Context, u *upstream, tool string, req func(context.Context, *mcp.ClientSession) (*R, error)) (*R, error) {
	cs, err := u.live(ctx)
	if err != nil {
		return nil, err
	}
	if tool != "" && u.p.pins.isChanged(u.name, tool) {
		return nil, errToolChanged
	}
	cctx, cancel := context.WithTimeout(ctx, u.p.cfg.CallTimeout)
	defer cancel()
	res, err := req(cctx, cs)
	if err == nil && res == nil {
		err = errors.New("no result")
	}
	if err != nil {
		if ctx.Err() == nil {
			u.drop(cs)
		}
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %s", u.p.cfg.CallTimeout)
		}
		return nil, err
	}
	return res, nil
}
