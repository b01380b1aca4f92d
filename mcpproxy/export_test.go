package mcpproxy

// Subscribers is the number of client sessions subscribed to uri, for
// tests that wait for the proxy to see a session end.
func Subscribers(p *Proxy, uri string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs[uri])
}
