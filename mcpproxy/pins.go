package mcpproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeToolChanged: the upstream's definition of the tool (name,
// description, schemas) differs from the one pinned on first use, as in a
// rug pull, where a server changes a tool after it was trusted. The tool
// is not offered and its calls are refused until an operator accepts the
// new definition by removing the tool's pin from the pins file; the next
// start records the definition then in force.
const CodeToolChanged = "tool_changed"

// pins are the digests of the upstream's tool definitions, by server and
// tool, kept in a JSON file (Config.Pins): recorded on first use, checked
// on every start and on every reconnection of the upstream.
type pins struct {
	path, server string

	mu      sync.Mutex
	file    map[string]map[string]string // server -> tool -> digest
	changed map[string]string            // tool -> the changed definition's digest
}

// loadPins reads the pins file; a missing file is an empty one, an
// unreadable or malformed one an error (the proxy does not start).
func loadPins(path, server string) (*pins, error) {
	p := &pins{path: path, server: server, file: map[string]map[string]string{}, changed: map[string]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: pins: %w", err)
	}
	if err := json.Unmarshal(b, &p.file); err != nil {
		return nil, fmt.Errorf("mcpproxy: pins file %s is not a JSON object of servers to tools to digests: %w", path, err)
	}
	if p.file == nil {
		p.file = map[string]map[string]string{}
	}
	return p, nil
}

// ToolDigest is the pin of a tool definition: SHA-256 over the JSON of its
// name, title, description, input and output schemas and annotations.
func ToolDigest(t *mcp.Tool) string {
	b, _ := json.Marshal(struct {
		Name         string `json:"name"`
		Title        string `json:"title,omitempty"`
		Description  string `json:"description,omitempty"`
		InputSchema  any    `json:"inputSchema,omitempty"`
		OutputSchema any    `json:"outputSchema,omitempty"`
		Annotations  any    `json:"annotations,omitempty"`
	}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// check compares tools with the pins: a tool without a pin is pinned now
// (and the file written), a tool whose definition changed is marked so. It
// returns the changed tools.
func (p *pins) check(tools []*mcp.Tool) (map[string]bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	mine := p.file[p.server]
	if mine == nil {
		mine = map[string]string{}
		p.file[p.server] = mine
	}
	changed, wrote := map[string]bool{}, false
	for _, t := range tools {
		d := ToolDigest(t)
		switch pinned, ok := mine[t.Name]; {
		case !ok:
			mine[t.Name], wrote = d, true
		case pinned != d:
			p.changed[t.Name] = d
			changed[t.Name] = true
		}
	}
	if !wrote {
		return changed, nil
	}
	b, err := json.MarshalIndent(p.file, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := p.path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return nil, fmt.Errorf("mcpproxy: pins: %w", err)
	}
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("mcpproxy: pins: %w", err)
	}
	if err := os.Rename(tmp, p.path); err != nil {
		return nil, fmt.Errorf("mcpproxy: pins: %w", err)
	}
	return changed, nil
}

// isChanged reports whether tool's definition differs from its pin.
func (p *pins) isChanged(tool string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.changed[tool]
	return ok
}
