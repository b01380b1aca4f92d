package mcpproxy

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/eval"
)

// Resource subscriptions and completions pass through the proxy decided
// as reads are. A client's resources/subscribe is decided by the rules of
// phase resource as a read of that URI (refused, or asked: the refusal
// names an approval request, since a subscription cannot carry the
// question), then made upstream, once per URI however many clients
// subscribe; the upstream's notifications/resources/updated go to the
// clients the SDK's server holds subscribed (a notification about a URI
// another upstream offers is dropped). A completion/complete of a prompt's
// argument or a resource template's is decided as a read of that prompt
// (by name) or template, then forwarded to the upstream that offers it.

// owner is the upstream that offers uri: as a resource, or as a resource
// template (uri is the template, or matches it as the SDK's server
// routes a read); nil when none does, or more than one template matches.
func (p *Proxy) owner(uri string) *upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o, ok := p.reads[resourceKey(uri)]; ok {
		return o.up
	}
	if o, ok := p.reads[templateKey(uri)]; ok {
		return o.up
	}
	// The answer does not depend on the order of the map: the one
	// upstream whose templates match, or nil.
	var found *upstream
	for _, o := range p.reads {
		if o.tmpl == nil || !o.tmpl.Regexp().MatchString(uri) {
			continue // not a template, or one that does not compile or match
		}
		if found != nil && found != o.up {
			return nil // two upstreams' templates: which one is meant cannot be told
		}
		found = o.up
	}
	return found
}

// The proxy holds an upstream subscription to a URI while at least one
// client session is subscribed to it, as the SDK's server sees it: a set
// of sessions per URI (a session that subscribes twice is unsubscribed by
// one unsubscription, as the SDK's server forgets it then), from which a
// session leaves by unsubscribing, when its subscriptions/listen stream
// ends, or when it ends (dropSession) without unsubscribing. The upstream
// is subscribed when the first session joins and unsubscribed when the
// last one leaves; subMu orders these changes and their upstream calls, so
// that an unsubscription never overtakes the subscription it undoes.

// subscribe is the server's SubscribeHandler: the subscription is decided
// as a read of the URI, and made upstream unless it is already.
func (p *Proxy) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	up := p.owner(uri)
	if up == nil {
		return fmt.Errorf("celguard: no server behind this proxy offers the resource %s (code %s)", uri, CodeReadRefused)
	}
	r := eval.Resource{Server: up.name, Kind: eval.KindResource, URI: uri}
	if _, _, err := p.decideRead(ctx, req.Session, nil, "", &r, false); err != nil {
		return err
	}
	p.subMu.Lock()
	defer p.subMu.Unlock()
	if _, live := p.sessions.Load(req.Session); !live {
		// The session ended while its subscription was decided
		// (dropSession has run): nothing is left to unsubscribe it.
		return fmt.Errorf("celguard: the session ended (code %s)", CodeUpstreamFailed)
	}
	p.mu.Lock()
	subs := p.subs[uri]
	_, already := subs[req.Session]
	p.mu.Unlock()
	if already {
		return nil
	}
	if len(subs) == 0 {
		_, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*struct{}, error) {
			return &struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
		if err != nil {
			p.log.Warn("upstream subscription failed", "server", up.name, "uri", uri, "error", err)
			return fmt.Errorf("celguard: the %s server failed this subscription: %v (code %s)", up.name, err, CodeUpstreamFailed)
		}
	}
	p.mu.Lock()
	if p.subs[uri] == nil {
		p.subs[uri] = map[*mcp.ServerSession]struct{}{}
	}
	p.subs[uri][req.Session] = struct{}{}
	p.mu.Unlock()
	return nil
}

// unsubscribe is the server's UnsubscribeHandler: the last client's
// unsubscription ends the upstream's. The SDK's server calls it too when a
// subscriptions/listen stream ends, with the stream's context, cancelled by
// then: the upstream is unsubscribed all the same.
func (p *Proxy) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	if p.leave(req.Params.URI, req.Session) {
		p.unsubscribeUpstream(context.WithoutCancel(ctx), req.Params.URI)
	}
	return nil
}

// dropSession takes ss, a client session that ended, out of every
// subscription, unsubscribing the upstream from the URIs it was the last
// one subscribed to: a client that disconnects without unsubscribing
// leaves no upstream subscription behind.
func (p *Proxy) dropSession(ss *mcp.ServerSession) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	p.sessions.Delete(ss)
	p.mu.Lock()
	var uris []string
	for uri, subs := range p.subs {
		if _, ok := subs[ss]; ok {
			uris = append(uris, uri)
		}
	}
	p.mu.Unlock()
	for _, uri := range uris {
		if p.leave(uri, ss) {
			p.unsubscribeUpstream(context.Background(), uri)
		}
	}
}

// leave takes ss out of uri's subscribers, and reports whether it was the
// last one. The caller holds p.subMu.
func (p *Proxy) leave(uri string, ss *mcp.ServerSession) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	subs := p.subs[uri]
	if _, ok := subs[ss]; !ok {
		return false
	}
	delete(subs, ss)
	if len(subs) > 0 {
		return false
	}
	delete(p.subs, uri)
	return true
}

// unsubscribeUpstream ends the upstream's subscription to uri, within the
// call timeout. The caller holds p.subMu.
func (p *Proxy) unsubscribeUpstream(ctx context.Context, uri string) {
	up := p.owner(uri)
	if up == nil {
		return
	}
	_, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*struct{}, error) {
		return &struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		p.log.Warn("upstream unsubscription failed", "server", up.name, "uri", uri, "error", err)
	}
}

// updated passes up's notifications/resources/updated on to the clients
// subscribed to the URI, if up is the one that offers it.
func (p *Proxy) updated(up *upstream, params *mcp.ResourceUpdatedNotificationParams) {
	if p.owner(params.URI) != up {
		p.log.Warn("upstream notified an update of a resource it does not offer: dropped", "server", up.name, "uri", params.URI)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CallTimeout)
	defer cancel()
	if err := p.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: params.URI}); err != nil {
		p.log.Warn("resource update not passed on", "uri", params.URI, "error", err)
	}
}

// resubscribe makes the subscriptions to up's resources again on cs, a
// new session after the old one failed.
func (p *Proxy) resubscribe(up *upstream, cs *mcp.ClientSession) {
	p.mu.Lock()
	var uris []string
	for uri := range p.subs {
		uris = append(uris, uri)
	}
	p.mu.Unlock()
	for _, uri := range uris {
		if p.owner(uri) != up {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CallTimeout)
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			p.log.Warn("upstream subscription not made again", "server", up.name, "uri", uri, "error", err)
		}
		cancel()
	}
}

// complete is the server's CompletionHandler.
func (p *Proxy) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	if ref == nil {
		return nil, fmt.Errorf("celguard: a completion without a reference (code %s)", CodeReadRefused)
	}
	params := *req.Params
	var (
		up *upstream
		r  eval.Resource
	)
	switch ref.Type {
	case "ref/prompt":
		p.mu.Lock()
		o, ok := p.reads[promptKey(ref.Name)]
		p.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("celguard: no server behind this proxy offers the prompt %s (code %s)", ref.Name, CodeReadRefused)
		}
		up = o.up
		name := ref.Name
		if p.prefixed {
			name = strings.TrimPrefix(name, up.name+"__")
		}
		r = eval.Resource{Server: up.name, Kind: eval.KindPrompt, Name: name}
		params.Ref = &mcp.CompleteReference{Type: ref.Type, Name: name}
	case "ref/resource":
		if up = p.owner(ref.URI); up == nil {
			return nil, fmt.Errorf("celguard: no server behind this proxy offers the resource %s (code %s)", ref.URI, CodeReadRefused)
		}
		r = eval.Resource{Server: up.name, Kind: eval.KindResource, URI: ref.URI}
	default:
		return nil, fmt.Errorf("celguard: a completion of a %q reference (code %s)", ref.Type, CodeReadRefused)
	}
	if _, _, err := p.decideRead(ctx, req.Session, nil, "", &r, false); err != nil {
		return nil, err
	}
	res, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		return cs.Complete(ctx, &params)
	})
	if err != nil {
		return nil, fmt.Errorf("celguard: the %s server failed this completion: %v (code %s)", up.name, err, CodeUpstreamFailed)
	}
	return res, nil
}
