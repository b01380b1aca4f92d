package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/celguard/celguard/eval"
)

// Claude Code asks the user itself when celguard answers ask, and its hooks
// never hear the answer. celguard learns it from what follows:
//
//  1. PreToolUse: the ask is recorded as a pending request bound to the
//     exact call (eval.WithApprovalRequests).
//  2. PermissionRequest: Claude Code is about to show its dialog for that
//     call; celguard notes it on the request, with each "don't ask again"
//     rule the dialog offers (permission_suggestions of type addRules and
//     behavior allow) and whether that rule is already in the settings file
//     it would go to. It answers nothing: the user decides.
//  3. PostToolUse or PostToolUseFailure of the same call: the call ran, so
//     the user approved it. If an offered rule is now in its settings file
//     and was not before, the user chose "don't ask again": celguard records
//     a session approval of the rule that asked, for that tool (scope
//     session), so its asks stop too. Otherwise the user approved once:
//     the request is answered and nothing is remembered.
//
// A rule the dialog adds for the session only ("session" destination) is
// not written anywhere celguard can see: it counts as once.

// offeredRule is one "don't ask again" rule of a permission dialog.
type offeredRule struct {
	Rule        string `json:"rule"`
	Destination string `json:"destination"`
	File        string `json:"file"`
	Present     bool   `json:"present"`
}

// permissionNote is what celguard keeps of a permission dialog on the
// request (eval.Request.Host).
type permissionNote struct {
	Asked   bool          `json:"asked"`
	Offered []offeredRule `json:"offered,omitempty"`
}

// notePermission notes on the call's pending request that the host is
// asking the user, with the rules its dialog offers; the note is
// committed with the session's state.
func notePermission(ctx context.Context, sess *eval.Session, ev Event) error {
	r, ok := sess.RequestFor(ev.Call)
	if !ok {
		return nil
	}
	note := permissionNote{Asked: true}
	for _, s := range ev.suggestions {
		m, _ := s.(map[string]any)
		if m == nil || m["type"] != "addRules" || m["behavior"] != "allow" {
			continue
		}
		dest, _ := m["destination"].(string)
		file := settingsFile(dest, ev.Call.Cwd)
		rules, _ := m["rules"].([]any)
		for _, rv := range rules {
			rm, _ := rv.(map[string]any)
			tool, _ := rm["toolName"].(string)
			if tool == "" {
				continue
			}
			rule := tool
			if c, _ := rm["ruleContent"].(string); c != "" {
				rule += "(" + c + ")"
			}
			note.Offered = append(note.Offered, offeredRule{Rule: rule, Destination: dest, File: file, Present: file != "" && allowsRule(file, rule)})
		}
	}
	b, err := json.Marshal(note)
	if err != nil {
		return nil // nothing the host said can be kept: the request stays as it was
	}
	if _, err := sess.NoteRequest(ctx, r.ID, b); err != nil {
		return fmt.Errorf("what the permission dialog offered could not be kept: %w", err)
	}
	return nil
}

// learnApproval records what the user chose for a call that ran after the
// host asked them about it (see above).
func learnApproval(ctx context.Context, sess *eval.Session, ev Event) {
	r, ok := sess.RequestFor(ev.Call)
	if !ok || len(r.Host) == 0 {
		return
	}
	var note permissionNote
	if json.Unmarshal(r.Host, &note) != nil || !note.Asked {
		return
	}
	for _, o := range note.Offered {
		if !o.Present && o.File != "" && allowsRule(o.File, o.Rule) {
			_, _, _ = sess.Approve(ctx, r.ID, eval.GrantSession, ev.Host+" permission dialog (don't ask again: "+o.Rule+")")
			return
		}
	}
	// Approved once: answered, nothing to remember. (A store that fails
	// here only leaves the request pending: nothing more is allowed.)
	_, _ = sess.Revoke(ctx, r.ID)
}

// settingsFile is the Claude Code settings file a permission rule goes to:
// localSettings and projectSettings under the project directory
// ($CLAUDE_PROJECT_DIR, or the call's working directory), userSettings
// under the home directory; "" for the session or anything else.
func settingsFile(dest, cwd string) string {
	project := os.Getenv("CLAUDE_PROJECT_DIR")
	if !filepath.IsAbs(project) {
		project = cwd
	}
	switch dest {
	case "localSettings":
		return filepath.Join(project, ".claude", "settings.local.json")
	case "projectSettings":
		return filepath.Join(project, ".claude", "settings.json")
	case "userSettings":
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, ".claude", "settings.json")
		}
	}
	return ""
}

// allowsRule reports whether the settings file lists rule under
// permissions.allow.
func allowsRule(file, rule string) bool {
	data, err := os.ReadFile(file)
	if err != nil || len(data) > 4<<20 {
		return false
	}
	var s struct {
		Permissions struct {
			Allow []string `json:"allow"`
		} `json:"permissions"`
	}
	if json.Unmarshal(data, &s) != nil {
		return false
	}
	for _, a := range s.Permissions.Allow {
		if a == rule {
			return true
		}
	}
	return false
}
