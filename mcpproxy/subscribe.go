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
	p.mu.Lock()
	p.subs[uri]++
	first := p.subs[uri] == 1
	p.mu.Unlock()
	if !first {
		return nil
	}
	_, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*struct{}, error) {
		return &struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		p.mu.Lock()
		p.subs[uri]--
		if p.subs[uri] <= 0 {
			delete(p.subs, uri)
		}
		p.mu.Unlock()
		p.log.Warn("upstream subscription failed", "server", up.name, "uri", uri, "error", err)
		return fmt.Errorf("celguard: the %s server failed this subscription: %v (code %s)", up.name, err, CodeUpstreamFailed)
	}
	return nil
}

// unsubscribe is the server's UnsubscribeHandler: the last client's
// unsubscription ends the upstream's.
func (p *Proxy) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	p.mu.Lock()
	n, ok := p.subs[uri]
	if ok {
		if n <= 1 {
			delete(p.subs, uri)
		} else {
			p.subs[uri] = n - 1
		}
	}
	p.mu.Unlock()
	if !ok || n > 1 {
		return nil
	}
	if up := p.owner(uri); up != nil {
		_, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*struct{}, error) {
			return &struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		})
		if err != nil {
			p.log.Warn("upstream unsubscription failed", "server", up.name, "uri", uri, "error", err)
		}
	}
	return nil
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
