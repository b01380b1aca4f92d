package mcpproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeToolChanged: the upstream's definition of the tool (name,
// description, schemas) differs from the one pinned on first use, as in a
// rug pull, where a server changes a tool after it was trusted. The tool
// is not offered and its calls are refused until an operator accepts the
// new definition (AcceptPin, `celguard mcp pins accept`, or serve's
// operator route), which pins the definition the proxy saw and refused.
const CodeToolChanged = "tool_changed"

// PinsFile is the pins file's content: the digest of each tool's
// definition by server and tool (Pins), and the changed definitions seen
// and refused since, waiting for an operator (Pending).
type PinsFile struct {
	// Version is 2. A file of version 1 is the Pins map alone, read as
	// such and written back as version 2.
	Version int                          `json:"version"`
	Pins    map[string]map[string]string `json:"pins"`
	Pending map[string]map[string]string `json:"pending,omitempty"`
}

// ReadPins reads a pins file; a missing file is an empty one, an
// unreadable or malformed one an error.
func ReadPins(path string) (*PinsFile, error) {
	f := &PinsFile{Version: 2, Pins: map[string]map[string]string{}, Pending: map[string]map[string]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: pins: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("mcpproxy: pins file %s is not a JSON object: %w", path, err)
	}
	if _, v2 := probe["version"]; v2 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(f); err != nil || f.Version != 2 {
			return nil, fmt.Errorf("mcpproxy: pins file %s is not a version 2 pins file (version, pins, pending): %v", path, err)
		}
	} else if err := json.Unmarshal(b, &f.Pins); err != nil {
		return nil, fmt.Errorf("mcpproxy: pins file %s is not a JSON object of servers to tools to digests: %w", path, err)
	}
	if f.Pins == nil {
		f.Pins = map[string]map[string]string{}
	}
	if f.Pending == nil {
		f.Pending = map[string]map[string]string{}
	}
	return f, nil
}

// Write writes f to path atomically, mode 0600.
func (f *PinsFile) Write(path string) error {
	f.Version = 2
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mcpproxy: pins: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pins-*")
	if err != nil {
		return fmt.Errorf("mcpproxy: pins: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("mcpproxy: pins: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mcpproxy: pins: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("mcpproxy: pins: %w", err)
	}
	return nil
}

// PendingPin is a changed tool definition waiting for an operator.
type PendingPin struct {
	Server, Tool string
	// Pinned is the digest in force; Seen the changed definition's.
	Pinned, Seen string
}

// PendingPins lists the changed definitions of f, by server and tool.
func (f *PinsFile) PendingPins() []PendingPin {
	var out []PendingPin
	for server, tools := range f.Pending {
		for tool, seen := range tools {
			out = append(out, PendingPin{Server: server, Tool: tool, Pinned: f.Pins[server][tool], Seen: seen})
		}
	}
	slices.SortFunc(out, func(a, b PendingPin) int {
		if a.Server != b.Server {
			return cmpString(a.Server, b.Server)
		}
		return cmpString(a.Tool, b.Tool)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AcceptPin accepts the changed definition of server's tool that a proxy
// saw and refused: its digest becomes the pin, so the proxies using path
// offer and forward the tool again (a running proxy reads the file again
// when the tool is listed or called). Only the definition seen is
// accepted: a server that changes the tool once more is refused again. It
// returns the accepted digest; an error when nothing is pending for it.
func AcceptPin(path, server, tool string) (string, error) {
	f, err := ReadPins(path)
	if err != nil {
		return "", err
	}
	seen, ok := f.Pending[server][tool]
	if !ok {
		return "", fmt.Errorf("mcpproxy: no changed definition of %s's tool %s is waiting in %s: %w", server, tool, path, ErrNotPending)
	}
	if f.Pins[server] == nil {
		f.Pins[server] = map[string]string{}
	}
	f.Pins[server][tool] = seen
	delete(f.Pending[server], tool)
	if len(f.Pending[server]) == 0 {
		delete(f.Pending, server)
	}
	return seen, f.Write(path)
}

// ErrNotPending is AcceptPin's error when no changed definition of the
// tool is waiting; it is an fs.ErrNotExist.
var ErrNotPending = fmt.Errorf("nothing pending: %w", fs.ErrNotExist)

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

// pins keeps a proxy's view of the pins file: recorded on first use,
// checked at every start and reconnection of an upstream, read again when
// a changed tool is listed or called (an operator may have accepted it).
type pins struct {
	path string

	mu      sync.Mutex
	changed map[string]map[string]string // server -> tool -> the changed definition's digest
}

// loadPins checks that the pins file reads; an unreadable or malformed one
// is an error (the proxy does not start).
func loadPins(path string) (*pins, error) {
	if _, err := ReadPins(path); err != nil {
		return nil, err
	}
	return &pins{path: path, changed: map[string]map[string]string{}}, nil
}

// check compares server's tools with the pins: a tool without a pin is
// pinned now, a tool whose definition changed is marked so and recorded as
// pending. It returns the changed tools.
func (p *pins) check(server string, tools []*mcp.Tool) (map[string]bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := ReadPins(p.path)
	if err != nil {
		return nil, err
	}
	mine := f.Pins[server]
	if mine == nil {
		mine = map[string]string{}
		f.Pins[server] = mine
	}
	changed, wrote := map[string]bool{}, false
	delete(p.changed, server)
	for _, t := range tools {
		d := ToolDigest(t)
		switch pinned, ok := mine[t.Name]; {
		case !ok:
			mine[t.Name], wrote = d, true
		case pinned != d:
			if p.changed[server] == nil {
				p.changed[server] = map[string]string{}
			}
			p.changed[server][t.Name] = d
			changed[t.Name] = true
			if f.Pending[server][t.Name] != d {
				if f.Pending[server] == nil {
					f.Pending[server] = map[string]string{}
				}
				f.Pending[server][t.Name], wrote = d, true
			}
		}
	}
	if !wrote {
		return changed, nil
	}
	return changed, f.Write(p.path)
}

// isChanged reports whether server's tool differs from its pin, reading
// the file again first when it does (an operator may have accepted it
// since). A file that no longer reads keeps the tool refused.
func (p *pins) isChanged(server, tool string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen, ok := p.changed[server][tool]
	if !ok {
		return false
	}
	f, err := ReadPins(p.path)
	if err != nil || f.Pins[server][tool] != seen {
		return true
	}
	delete(p.changed[server], tool)
	return false
}
