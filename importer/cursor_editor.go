package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/tailscale/hujson"

	"github.com/celguard/celguard/policy"
)

// Cursor's editor permissions (cursor.com/docs/reference/permissions):
// ~/.cursor/permissions.json and <workspace>/.cursor/permissions.json,
// JSON with comments, both optional, their arrays concatenated:
//
//	{
//	  "terminalAllowlist": ["git", "npm", "cargo build"],  // run without approval
//	  "mcpAllowlist": ["github:*", "linear:list_issues"],  // MCP server:tool
//	  "autoRun": {"allow_instructions": ["..."], "block_instructions": ["..."]}
//	}
//
// Unknown keys are ignored and so are entries that are not strings. The
// lists only ever allow: what no entry names is asked. The documentation
// calls terminal entries commands without saying how one is matched, so the
// import takes the reading that is never looser: an entry's words must be
// the first words of every command of a plain line (entry "git" allows
// "git push" and not "gitk"; "cargo build" allows "cargo build --release"),
// at top level, without wrappers, assignments, redirections or non-literal
// words. Cursor's hooks name an MCP tool without its server, so an
// mcpAllowlist entry has no exact celguard form: it is left out (stricter).
// autoRun steers Cursor's Auto-review classifier in plain language: it has
// no rule form and is left out.

// cursorEntry is one string of an editor permission list and where it is.
type cursorEntry struct {
	list string // terminalAllowlist, mcpAllowlist, autoRun.allow_instructions, autoRun.block_instructions
	text string
	pos  policy.Pos
}

// isCursorEditor says whether a Cursor file is an editor permissions.json
// rather than a CLI configuration: by its name, or by top-level keys only
// permissions.json has.
func isCursorEditor(f File) bool {
	if path.Base(strings.ReplaceAll(f.Name, "\\", "/")) == "permissions.json" {
		return true
	}
	std, err := hujson.Standardize(append([]byte(nil), f.Data...))
	if err != nil {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(std, &top) != nil {
		return false
	}
	_, cli := top["permissions"]
	_, t := top["terminalAllowlist"]
	_, m := top["mcpAllowlist"]
	_, a := top["autoRun"]
	return !cli && (t || m || a)
}

// cursorEditorEntries reads a permissions.json.
func cursorEditorEntries(f File) ([]cursorEntry, policy.Diagnostics) {
	lines := lineStarts(f.Data)
	at := func(off int64) policy.Pos { return offsetPos(f.Name, lines, f.Data, off) }
	// Standardize blanks comments and trailing commas out, keeping every
	// offset.
	data, err := hujson.Standardize(append([]byte(nil), f.Data...))
	if err != nil {
		pos := policy.Pos{File: f.Name, Line: 1, Col: 1}
		var line, col int
		if _, e := fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &line, &col); e == nil && line > 0 && col > 0 {
			pos.Line, pos.Col = line, col
		}
		return nil, policy.Diagnostics{diag(CodeSyntax, policy.SeverityError, pos, "not JSON with comments: %s", strings.TrimPrefix(err.Error(), "hujson: "))}
	}
	if !json.Valid(data) {
		var se *json.SyntaxError
		err := json.Unmarshal(data, new(any))
		off := int64(0)
		if errors.As(err, &se) {
			off = se.Offset - 1
		}
		return nil, policy.Diagnostics{diag(CodeSyntax, policy.SeverityError, at(max(off, 0)), "not JSON: %v", err)}
	}
	var ds policy.Diagnostics
	var out []cursorEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// skip reads one value whatever it is.
	var skip func() error
	skip = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
			for dec.More() {
				if d == '{' {
					if _, err := dec.Token(); err != nil {
						return err
					}
				}
				if err := skip(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	// strings reads a list of strings; other entries are dropped, as
	// Cursor drops them.
	list := func(name string) error {
		start := tokenStart(data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return shapeErr(start, "%s must be a list of strings", name)
		}
		for dec.More() {
			istart := tokenStart(data, dec.InputOffset())
			if next := data[istart]; next == '{' || next == '[' {
				if err := skip(); err != nil {
					return err
				}
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(istart), "%s: an entry that is not a string is dropped, as Cursor drops it", name))
				continue
			}
			it, err := dec.Token()
			if err != nil {
				return err
			}
			s, ok := it.(string)
			if !ok {
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(istart), "%s: an entry that is not a string is dropped, as Cursor drops it", name))
				continue
			}
			out = append(out, cursorEntry{list: name, text: s, pos: at(istart)})
		}
		_, err = dec.Token()
		return err
	}
	walk := func() error {
		start := tokenStart(data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return shapeErr(start, "a permissions.json is an object")
		}
		for dec.More() {
			kstart := tokenStart(data, dec.InputOffset())
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			switch key {
			case "terminalAllowlist", "mcpAllowlist":
				if err := list(key); err != nil {
					return err
				}
			case "autoRun":
				ostart := tokenStart(data, dec.InputOffset())
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				if d, ok := tok.(json.Delim); !ok || d != '{' {
					return shapeErr(ostart, "autoRun must be an object")
				}
				for dec.More() {
					sstart := tokenStart(data, dec.InputOffset())
					k, err := dec.Token()
					if err != nil {
						return err
					}
					sub, _ := k.(string)
					if sub == "allow_instructions" || sub == "block_instructions" {
						if err := list("autoRun." + sub); err != nil {
							return err
						}
						continue
					}
					ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(sstart), "Cursor ignores the key autoRun.%s", sub))
					if err := skip(); err != nil {
						return err
					}
				}
				if _, err := dec.Token(); err != nil {
					return err
				}
			default:
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(kstart), "Cursor ignores the top-level key %q", key))
				if err := skip(); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token()
		return err
	}
	if err := walk(); err != nil && !errors.Is(err, io.EOF) {
		ds = append(ds, walkDiag(err, at))
	}
	return out, ds
}

// cursorTerminalWord is a word a terminal allowlist entry may hold: plain
// characters only (no quotes, expansions, operators or glob characters,
// whose meaning in an entry Cursor does not document).
var cursorTerminalWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./,:=+@%^-]+$`) })

// cursorTerminalTest is the CEL test that command c starts with the
// entry's words; ok is false when the entry has no exact reading.
func cursorTerminalTest(entry string) (string, bool) {
	words := strings.Fields(entry)
	if len(words) == 0 {
		return "", false
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("c.argv.size() >= %d", len(words)))
	for i, w := range words {
		if !cursorTerminalWord().MatchString(w) {
			return "", false
		}
		parts = append(parts, fmt.Sprintf("c.argv[%d] == %q", i, w))
	}
	return "(" + strings.Join(parts, " && ") + ")", true
}
