package mcpproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerSpec is one upstream as a client's MCP configuration writes it
// (the mcpServers entries of Claude Desktop, Cursor and Claude Code, the
// servers of VS Code): a command over stdio, or a URL over streamable
// HTTP.
type ServerSpec struct {
	// Type is "stdio", "http" or "streamable-http"; inferred when empty
	// (a URL is HTTP, a command stdio).
	Type string `json:"type,omitempty"`
	// Command, Args, Env and Cwd start a server over stdio; Env adds to
	// the proxy's environment.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// URL and Headers reach a server over streamable HTTP.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// ReadServers reads an MCP configuration file: a JSON object with
// mcpServers (or servers, VS Code's key) mapping each server's name to
// its ServerSpec. Unknown keys of a server are an error, so that a typo
// does not start another server than the one meant.
func ReadServers(path string) (map[string]ServerSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("mcpproxy: %s is not a JSON object: %w", path, err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		raw, ok = top["servers"]
	}
	if !ok {
		return nil, fmt.Errorf("mcpproxy: %s has no mcpServers (or servers) object", path)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("mcpproxy: %s: mcpServers is not an object of servers: %w", path, err)
	}
	out := make(map[string]ServerSpec, len(entries))
	for name, e := range entries {
		var s ServerSpec
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("mcpproxy: %s: server %s: %w", path, name, err)
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("mcpproxy: %s: server %s: %w", path, name, err)
		}
		out[name] = s
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mcpproxy: %s names no server", path)
	}
	return out, nil
}

// ParseUpstream reads one --upstream flag: NAME=URL (streamable HTTP, a
// URL of http or https) or NAME=COMMAND ARGS... (stdio; the words split
// at spaces, so a word with a space needs a configuration file).
func ParseUpstream(spec string) (string, ServerSpec, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok || name == "" || strings.TrimSpace(rest) == "" {
		return "", ServerSpec{}, fmt.Errorf("mcpproxy: upstream %q is not NAME=URL or NAME=COMMAND [ARGS...]", spec)
	}
	rest = strings.TrimSpace(rest)
	var s ServerSpec
	if u, err := url.Parse(rest); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		s.URL = rest
	} else {
		words := strings.Fields(rest)
		s.Command, s.Args = words[0], words[1:]
	}
	return name, s, s.check()
}

func (s *ServerSpec) check() error {
	switch s.Type {
	case "":
		if s.URL != "" {
			s.Type = "http"
		} else {
			s.Type = "stdio"
		}
	case "streamable-http", "streamableHttp":
		s.Type = "http"
	case "stdio", "http":
	default:
		return fmt.Errorf("type %q is not stdio or http (streamable HTTP; the SSE transport is not supported)", s.Type)
	}
	switch {
	case s.Type == "stdio" && (s.Command == "" || s.URL != ""):
		return fmt.Errorf("a stdio server needs a command, and no url")
	case s.Type == "http" && (s.URL == "" || s.Command != ""):
		return fmt.Errorf("an http server needs a url, and no command")
	case s.Type == "http":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q is not an http or https URL", s.URL)
		}
	}
	return nil
}

// Upstream makes the Upstream of the server named name: its stdio
// command's standard error goes to stderr (the server's own messages, as a
// client shows them); an HTTP server's requests carry Headers.
func (s ServerSpec) Upstream(name string, stderr io.Writer) Upstream {
	if s.Type == "http" || (s.Type == "" && s.URL != "") {
		client := &http.Client{Transport: headerTransport{headers: maps.Clone(s.Headers), next: http.DefaultTransport}}
		endpoint := s.URL
		return Upstream{Name: name, Transport: func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
		}}
	}
	command, args, dir := s.Command, slices.Clone(s.Args), s.Cwd
	var env []string
	if len(s.Env) > 0 {
		env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			env = append(env, k+"="+s.Env[k])
		}
	}
	return Upstream{Name: name, Transport: func() mcp.Transport {
		c := exec.Command(command, args...)
		c.Stderr, c.Env, c.Dir = stderr, env, dir
		return &mcp.CommandTransport{Command: c}
	}}
}

// headerTransport adds a server's configured headers (Authorization, ...)
// to each request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}
