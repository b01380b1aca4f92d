package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// What an upstream offers can change while the proxy runs: it says so with
// notifications/tools/list_changed (or resources/, prompts/). The proxy
// then lists that kind again and offers the difference to its clients:
// new entries are added, vanished ones removed, changed ones replaced, each
// new or changed tool checked against the pins first (a changed definition
// is recorded pending and not offered). The SDK's server tells the clients
// (its own list_changed notifications), and each client's next list is
// decided again (phase tools). At the start the same code offers
// everything.

// Kinds of what an upstream offers, as its list_changed notifications
// name them.
const (
	kindTools     = "tools"
	kindResources = "resources"
	kindPrompts   = "prompts"
)

// offered is a resource, resource template or prompt the proxy offers: the
// upstream it is from, and its definition as the upstream gave it (JSON),
// to tell a change; a template's is compiled once, here (nil when it does
// not compile), for Proxy.owner.
type offered struct {
	up   *upstream
	def  []byte
	tmpl *uritemplate.Template
}

// Keys of Proxy.reads.
func resourceKey(uri string) string      { return "r\x00" + uri }
func templateKey(template string) string { return "t\x00" + template }
func promptKey(clientName string) string { return "p\x00" + clientName }

// changed lists what up offers of kind again and offers the difference
// (up's list_changed notification); it runs apart from the notification's
// handler, one refresh of an upstream at a time.
func (p *Proxy) changed(up *upstream, kind string) {
	up.refresh.Lock()
	defer up.refresh.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CallTimeout)
	defer cancel()
	cs, err := up.live(ctx)
	if err != nil {
		p.log.Warn("upstream changed its "+kind+", and could not be listed again", "server", up.name, "error", err)
		return
	}
	switch kind {
	case kindTools:
		err = p.syncTools(ctx, up, cs)
	case kindResources:
		err = p.syncResources(ctx, up, cs)
	case kindPrompts:
		err = p.syncPrompts(ctx, up, cs)
	}
	if err != nil {
		p.log.Warn("upstream changed its "+kind+", and could not be listed again", "server", up.name, "error", err)
		return
	}
	p.log.Info("upstream changed its "+kind+": offered again", "server", up.name)
}

// syncTools offers up's tools as cs lists them now.
func (p *Proxy) syncTools(ctx context.Context, up *upstream, cs *mcp.ClientSession) error {
	tools, err := listTools(ctx, cs)
	if err != nil {
		return fmt.Errorf("mcpproxy: listing %s's tools: %w", up.name, err)
	}
	if p.pins != nil {
		changed, err := p.pins.check(up.name, tools)
		if err != nil {
			return err
		}
		for name := range changed {
			p.log.Warn("tool definition changed since it was pinned: not offered until an operator accepts it", "server", up.name, "tool", name, "code", CodeToolChanged)
		}
	}
	seen := map[string]bool{}
	for _, t := range tools {
		name := p.clientName(up, t.Name)
		seen[name] = true
		p.mu.Lock()
		et := p.tools[name]
		p.mu.Unlock()
		if et != nil && et.up == up && sameDef(et.tool, t) {
			continue
		}
		if err := p.addTool(up, t); err != nil {
			// A tool the SDK cannot offer is not offered: it cannot be
			// called through the proxy either.
			p.log.Warn("tool not offered", "server", up.name, "tool", t.Name, "error", err)
		}
	}
	var gone []string
	p.mu.Lock()
	for name, et := range p.tools {
		if et.up == up && !seen[name] {
			gone = append(gone, name)
			delete(p.tools, name)
		}
	}
	p.mu.Unlock()
	if len(gone) > 0 {
		p.server.RemoveTools(gone...)
	}
	return nil
}

// syncResources offers up's resources and resource templates as cs lists
// them now, each read decided by the rules of phase resource.
func (p *Proxy) syncResources(ctx context.Context, up *upstream, cs *mcp.ClientSession) error {
	if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Resources == nil {
		return nil
	}
	seen := map[string]bool{}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing %s's resources: %w", up.name, err)
		}
		key := resourceKey(r.URI)
		seen[key] = true
		if def, fresh := p.fresh(up, key, r); fresh {
			offer := *r
			p.safely(up, "resource "+r.URI, func() {
				p.server.AddResource(&offer, p.readResource(up))
				p.setRead(key, up, def)
			})
		}
	}
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing %s's resource templates: %w", up.name, err)
		}
		key := templateKey(t.URITemplate)
		seen[key] = true
		if def, fresh := p.fresh(up, key, t); fresh {
			offer := *t
			p.safely(up, "resource template "+t.URITemplate, func() {
				p.server.AddResourceTemplate(&offer, p.readResource(up))
				p.setRead(key, up, def)
			})
		}
	}
	var resources, templates []string
	for _, key := range p.gone(up, seen, "r\x00", "t\x00") {
		if uri, ok := strings.CutPrefix(key, "r\x00"); ok {
			resources = append(resources, uri)
		} else if tmpl, ok := strings.CutPrefix(key, "t\x00"); ok {
			templates = append(templates, tmpl)
		}
	}
	if len(resources) > 0 {
		p.server.RemoveResources(resources...)
	}
	if len(templates) > 0 {
		p.server.RemoveResourceTemplates(templates...)
	}
	return nil
}

// syncPrompts offers up's prompts as cs lists them now.
func (p *Proxy) syncPrompts(ctx context.Context, up *upstream, cs *mcp.ClientSession) error {
	if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Prompts == nil {
		return nil
	}
	seen := map[string]bool{}
	for pr, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing %s's prompts: %w", up.name, err)
		}
		name := p.clientName(up, pr.Name)
		key := promptKey(name)
		seen[key] = true
		if def, fresh := p.fresh(up, key, pr); fresh {
			offer := *pr
			offer.Name = name
			upstreamName := pr.Name
			p.safely(up, "prompt "+pr.Name, func() {
				p.server.AddPrompt(&offer, p.getPrompt(up, upstreamName))
				p.setRead(key, up, def)
			})
		}
	}
	var gone []string
	for _, key := range p.gone(up, seen, "p\x00") {
		name, _ := strings.CutPrefix(key, "p\x00")
		gone = append(gone, name)
	}
	if len(gone) > 0 {
		p.server.RemovePrompts(gone...)
	}
	return nil
}

// fresh reports whether def, offered by up under key, is new or changed
// (so it is to be offered), with its JSON. An entry another upstream
// offers under the same key is not taken over.
func (p *Proxy) fresh(up *upstream, key string, def any) ([]byte, bool) {
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.reads[key]
	switch {
	case !ok:
		return raw, true
	case o.up != up:
		p.log.Warn("another upstream offers the same resource or prompt: not offered", "server", up.name, "offered_by", o.up.name, "what", key[2:])
		return nil, false
	}
	return raw, !bytes.Equal(o.def, raw)
}

// setRead records that up offers key, defined as def.
func (p *Proxy) setRead(key string, up *upstream, def []byte) {
	o := offered{up: up, def: def}
	if t, ok := strings.CutPrefix(key, "t\x00"); ok {
		o.tmpl, _ = uritemplate.New(t)
	}
	p.mu.Lock()
	p.reads[key] = o
	p.mu.Unlock()
}

// gone forgets, and returns, the keys with one of prefixes that up offered
// and no longer lists (not in seen).
func (p *Proxy) gone(up *upstream, seen map[string]bool, prefixes ...string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for key, o := range p.reads {
		if o.up != up || seen[key] {
			continue
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(key, pre) {
				out = append(out, key)
				delete(p.reads, key)
				break
			}
		}
	}
	return out
}

// sameDef reports whether two definitions are the same as JSON.
func sameDef(a, b any) bool {
	ra, err1 := json.Marshal(a)
	rb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ra, rb)
}
