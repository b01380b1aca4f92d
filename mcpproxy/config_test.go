package mcpproxy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/mcpproxy"
)

func TestParseUpstream(t *testing.T) {
	for _, tc := range []struct {
		spec, name, command, url, err string
		args                          []string
	}{
		{spec: "fs=mcp-server-filesystem /srv/app", name: "fs", command: "mcp-server-filesystem", args: []string{"/srv/app"}},
		{spec: "docs=https://mcp.example.com/mcp", name: "docs", url: "https://mcp.example.com/mcp"},
		{spec: "local=http://127.0.0.1:9744/mcp", name: "local", url: "http://127.0.0.1:9744/mcp"},
		{spec: "ftp=ftp://example.com/x", name: "ftp", command: "ftp://example.com/x"}, // not a URL the proxy reaches: a command
		{spec: "fs", err: "not NAME=URL"},
		{spec: "=cmd", err: "not NAME=URL"},
		{spec: "fs=  ", err: "not NAME=URL"},
	} {
		name, s, err := mcpproxy.ParseUpstream(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || name != tc.name || s.Command != tc.command || s.URL != tc.url || strings.Join(s.Args, " ") != strings.Join(tc.args, " ") {
			t.Errorf("%q: %q %+v %v", tc.spec, name, s, err)
		}
	}
}

func TestReadServers(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, err string
		servers         int
	}{
		{name: "mcpServers", file: `{"mcpServers": {"fs": {"command": "x", "args": ["a"], "env": {"K": "v"}}, "docs": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer t"}}}}`, servers: 2},
		{name: "VS Code servers", file: `{"servers": {"fs": {"type": "stdio", "command": "x"}, "g": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`, servers: 2},
		{name: "not JSON", file: `{`, err: "not a JSON object"},
		{name: "no servers", file: `{"other": {}}`, err: "no mcpServers"},
		{name: "empty", file: `{"mcpServers": {}}`, err: "names no server"},
		{name: "typo", file: `{"mcpServers": {"fs": {"comand": "x"}}}`, err: "unknown field"},
		{name: "both", file: `{"mcpServers": {"fs": {"command": "x", "url": "http://h/mcp"}}}`, err: "and no command"},
		{name: "sse", file: `{"mcpServers": {"fs": {"type": "sse", "url": "http://h/sse"}}}`, err: "SSE transport is not supported"},
		{name: "bad url", file: `{"mcpServers": {"fs": {"url": "file:///x"}}}`, err: "not an http or https URL"},
		{name: "neither", file: `{"mcpServers": {"fs": {}}}`, err: "needs a command"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
		if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		servers, err := mcpproxy.ReadServers(p)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || len(servers) != tc.servers {
			t.Errorf("%s: %+v %v", tc.name, servers, err)
		}
		for name, s := range servers {
			if up := s.Upstream(name, nil); up.Name != name || up.Transport() == nil {
				t.Errorf("%s: server %s makes no transport", tc.name, name)
			}
		}
	}
}

// FuzzReadServers: any configuration file is read into servers that each
// name a command or an http(s) URL, or refused with an error; never a
// panic.
func FuzzReadServers(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers": {"fs": {"command": "x", "args": ["a"]}}}`,
		`{"servers": {"g": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`,
		`{"mcpServers": {"fs": {"type": "streamable-http", "url": "https://h/mcp", "headers": {"a": "b"}}}}`,
		`{"mcpServers": []}`, `[]`, `null`, `{"mcpServers": {"x": null}}`,
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file string) {
		p := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		servers, err := mcpproxy.ReadServers(p)
		if err != nil {
			return
		}
		for name, s := range servers {
			switch s.Type {
			case "stdio":
				if s.Command == "" || s.URL != "" {
					t.Fatalf("%s: a stdio server without a command: %+v", name, s)
				}
			case "http":
				if s.Command != "" || !(strings.HasPrefix(s.URL, "http://") || strings.HasPrefix(s.URL, "https://")) {
					t.Fatalf("%s: an http server without an http URL: %+v", name, s)
				}
			default:
				t.Fatalf("%s: type %q", name, s.Type)
			}
		}
	})
}

// FuzzReadPins: any pins file is read or refused, never a panic; what is
// read writes back and reads again the same.
func FuzzReadPins(f *testing.F) {
	for _, seed := range []string{
		`{"fs": {"read_file": "sha256:00"}}`,
		`{"version": 2, "pins": {"fs": {"a": "sha256:1"}}, "pending": {"fs": {"a": "sha256:2"}}}`,
		`{"version": 3, "pins": {}}`, `{"version": 2, "extra": 1}`, `[]`, `null`, `{"fs": null}`,
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file string) {
		p := filepath.Join(dir, "pins.json")
		if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		pf, err := mcpproxy.ReadPins(p)
		if err != nil {
			return
		}
		_ = pf.PendingPins()
		if err := pf.Write(p); err != nil {
			t.Fatal(err)
		}
		again, err := mcpproxy.ReadPins(p)
		if err != nil || len(again.Pins) != len(pf.Pins) || len(again.PendingPins()) != len(pf.PendingPins()) {
			t.Fatalf("%q: written %+v, read back %+v, %v", file, pf, again, err)
		}
	})
}
