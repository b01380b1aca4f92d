package setup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/celguard/celguard/hooks"
)

// CodexTrust is one hook's entry in Codex's trust record: Codex runs a hook
// from a user or project hooks.json only when ~/.codex/config.toml holds
//
//	[hooks.state."KEY"]
//	trusted_hash = "HASH"
//
// for it, and skips it silently otherwise. KEY is the hooks.json's absolute
// path, the event's snake_case name, the index of the matcher group in the
// event's list and of the handler in the group; HASH is "sha256:" and the
// hex SHA-256 of the handler's normalised identity as compact JSON with
// sorted keys: event_name, the group's matcher when it has one, and the one
// handler {async, command, timeout, type} (statusMessage when set). The
// command line is part of the hash, so a hook installed again with other
// options is untrusted until trusted again.
type CodexTrust struct {
	Event string // the hook event, as in hooks.json (PreToolUse)
	Key   string
	Hash  string
}

// TOML returns the entry as the lines config.toml takes.
func (c CodexTrust) TOML() string {
	return fmt.Sprintf("[hooks.state.%s]\ntrusted_hash = %s\n", strconv.Quote(c.Key), strconv.Quote(c.Hash))
}

// codexEventLabels are the snake_case names Codex keys its hooks by.
var codexEventLabels = map[string]string{
	"PreToolUse":        "pre_tool_use",
	"PostToolUse":       "post_tool_use",
	"UserPromptSubmit":  "user_prompt_submit",
	"Stop":              "stop",
	"SessionStart":      "session_start",
	"PermissionRequest": "permission_request",
}

// codexDefaultTimeout is the timeout Codex gives a handler without one.
const codexDefaultTimeout = 600

// CodexTrustEntries returns the trust entries of celguard's hooks in a Codex
// hooks.json (settings, at the absolute path path).
func CodexTrustEntries(path string, settings []byte) ([]CodexTrust, error) {
	v, err := parseOrdered(settings)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	root, _ := v.(*object)
	if root == nil {
		return nil, fmt.Errorf("%s is not a JSON object", path)
	}
	hv, _ := root.get("hooks")
	hooksObj, _ := hv.(*object)
	if hooksObj == nil {
		return nil, nil
	}
	var out []CodexTrust
	for _, event := range hooksObj.keys {
		label, ok := codexEventLabels[event]
		if !ok {
			continue
		}
		groups, _ := hooksObj.vals[event].([]any)
		for gi, g := range groups {
			group, _ := g.(*object)
			if group == nil {
				continue
			}
			hl, _ := group.get("hooks")
			handlers, _ := hl.([]any)
			for hi, h := range handlers {
				handler, _ := h.(*object)
				if handler == nil || !isOurs(handler, hooks.Codex) {
					continue
				}
				hash, err := codexHookHash(label, group, handler)
				if err != nil {
					return nil, fmt.Errorf("%s: hooks.%s: %w", path, event, err)
				}
				out = append(out, CodexTrust{Event: event, Key: fmt.Sprintf("%s:%s:%d:%d", path, label, gi, hi), Hash: hash})
			}
		}
	}
	return out, nil
}

// codexHookHash is Codex's trust hash of one command handler.
func codexHookHash(label string, group, handler *object) (string, error) {
	command, _ := handler.get("command")
	cmd, ok := command.(string)
	if !ok {
		return "", fmt.Errorf("the command is not a string")
	}
	timeout := int64(codexDefaultTimeout)
	if tv, ok := handler.get("timeout"); ok {
		n, err := strconv.ParseInt(fmt.Sprint(tv), 10, 64)
		if err != nil {
			return "", fmt.Errorf("the timeout %v is not an integer", tv)
		}
		timeout = max(n, 1)
	}
	async := false
	if av, ok := handler.get("async"); ok {
		async, _ = av.(bool)
	}
	h := map[string]any{"type": "command", "command": cmd, "timeout": timeout, "async": async}
	if sm, ok := handler.get("statusMessage"); ok {
		h["statusMessage"] = sm
	}
	identity := map[string]any{"event_name": label, "hooks": []any{h}}
	// Codex ignores the matcher of the events that match nothing.
	if mv, ok := group.get("matcher"); ok && label != "user_prompt_submit" && label != "stop" {
		if m, _ := mv.(string); m != "" {
			identity["matcher"] = m
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(identity); err != nil {
		return "", err
	}
	// Rust's serde_json writes U+2028 and U+2029 as they are.
	s := strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(strings.TrimSuffix(b.String(), "\n"))
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// CodexProjectTrusted reports whether Codex trusts the project directory
// dir, as its config.toml (config, the file's content) records it: Codex
// loads a project's .codex/hooks.json only in a project it trusts, and
// skips it without a word otherwise.
func CodexProjectTrusted(config []byte, dir string) bool {
	_, projects := parseCodexConfig(string(config))
	return projects[filepath.Clean(dir)] == "trusted"
}
