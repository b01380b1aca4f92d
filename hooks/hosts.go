package hooks

import (
	"errors"
	"fmt"
	"maps"
	"strings"
)

// The hosts celguard has hooks for, by the name the command line (celguard
// hook HOST, hook install HOST, doctor HOST) and serve's /v1/hooks/{host}
// routes use.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Gemini     = "gemini"
	Cursor     = "cursor"
	Copilot    = "copilot"
	OpenCode   = "opencode"
)

// HostInfo is what celguard knows of one host, in the one table of hosts
// (LookupHost, HostTable): the protocol, install and doctor, the command
// line and serve all read it.
type HostInfo struct {
	// Name is the host's name on the command line: ClaudeCode, Codex,
	// Gemini or Cursor.
	Name string
	// Title is the product's name, for people: "Claude Code".
	Title string
	// Command is the host's command-line program: doctor runs it for its
	// version, and the hook looks for it among its ancestor processes.
	Command string
	// TestedVersion is the host version hooks/hostse2e runs the hooks
	// with, which docs/hooks.md names; empty for a host not run end to
	// end. Doctor warns of an older one.
	TestedVersion string
	// SettingsDir and SettingsFile are where celguard's hooks go: the file
	// SettingsFile in the directory SettingsDir of the project or of the
	// home directory.
	SettingsDir, SettingsFile string
	// UserSettingsDir, when set, is the user's directory in place of
	// SettingsDir (Copilot CLI: .copilot/hooks, the project's being
	// .github/hooks); HomeEnv, when set, is the environment variable that
	// moves the user's directory (CODEX_HOME, COPILOT_HOME), the settings
	// then being in it (in its UserSettingsDir's last element for Copilot).
	UserSettingsDir, HomeEnv string
	// UserDefault says that `hook install` installs for the user unless
	// told otherwise: the host skips a project's hooks, without a word, in
	// a project it has not trusted, and runs the user's everywhere.
	UserDefault bool
	// Managed is where the host reads its managed (administrator)
	// settings, by runtime.GOOS: a file in the same format as SettingsFile
	// that the host applies above the user's and the project's, and that
	// only an administrator can write. Empty for a host that has none in
	// that format (ManagedNone says why).
	Managed map[string]string
	// ManagedNone says why `hook install --managed` does not write this
	// host's managed settings; empty when Managed has a path.
	ManagedNone string
	// Events are the hook events celguard registers for.
	Events []string
	// Ignored are events of the host's protocol that celguard answers
	// without deciding (KindIgnore: no policy, no session, no state but
	// the state directory's periodic cleanup): the host's documented
	// events it does not act on. The lean hook client answers these
	// itself, from a table generated from this field
	// (daemonwire.IgnoredAnswer, `go generate ./hooks/daemonwire`); any
	// other event, ignored or not, it leaves to the daemon or to
	// `celguard hook`.
	Ignored []string
	// NoHook says what the host does when a hook's command cannot start.
	NoHook string

	new func(opts Options) Host
}

// hostTable lists the hosts, in the order Hosts gives them.
var hostTable = [...]HostInfo{
	{
		Name: ClaudeCode, Title: "Claude Code", Command: "claude", TestedVersion: "2.1.330",
		SettingsDir: ".claude", SettingsFile: "settings.json",
		// Read from the 2.1.330 binary: the managed file's directory by
		// platform.
		Managed: map[string]string{
			"linux":   "/etc/claude-code/managed-settings.json",
			"darwin":  "/Library/Application Support/ClaudeCode/managed-settings.json",
			"windows": `C:\Program Files\ClaudeCode\managed-settings.json`,
		},
		Events:  []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SessionStart", "SessionEnd", "PermissionRequest"},
		Ignored: []string{"Notification", "PreCompact", "SubagentStart", "SubagentStop"},
		NoHook:  "Claude Code then runs every call unguarded (a hook that cannot start is a non-blocking error)",
		new:     func(opts Options) Host { return &hookSpecificHost{name: ClaudeCode, dialect: &claude{opts: opts}} },
	},
	{
		Name: Codex, Title: "Codex", Command: "codex", TestedVersion: "0.169.0",
		SettingsDir: ".codex", SettingsFile: "hooks.json", HomeEnv: "CODEX_HOME", UserDefault: true,
		ManagedNone: "Codex reads managed hooks only from the [hooks] table of its requirements.toml " +
			"(/etc/codex/requirements.toml), TOML with a hooks.managed_dir, not from a hooks.json; " +
			"celguard does not write that file: install with --user and check it with celguard doctor",
		Events: []string{"PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"},
		NoHook: "Codex then runs every call unguarded (a hook that cannot start is a non-blocking error)",
		new:    func(opts Options) Host { return &hookSpecificHost{name: Codex, dialect: codex{opts: opts}} },
	},
	{
		Name: Gemini, Title: "Gemini CLI", Command: "gemini", TestedVersion: "0.61.0",
		SettingsDir: ".gemini", SettingsFile: "settings.json",
		// The system settings file, above the user's and the project's
		// (GEMINI_CLI_SYSTEM_SETTINGS_PATH overrides it); read from the
		// 0.61.0 bundle.
		Managed: map[string]string{
			"linux":   "/etc/gemini-cli/settings.json",
			"darwin":  "/Library/Application Support/GeminiCli/settings.json",
			"windows": `C:\ProgramData\gemini-cli\settings.json`,
		},
		Events:  []string{"BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "SessionStart", "SessionEnd"},
		Ignored: []string{"BeforeToolSelection", "Notification", "PreCompress"},
		NoHook:  "Gemini CLI then refuses every call",
		new:     func(opts Options) Host { return &gemini{opts: opts} },
	},
	{
		Name: Cursor, Title: "Cursor", Command: "cursor-agent",
		SettingsDir: ".cursor", SettingsFile: "hooks.json",
		ManagedNone: "Cursor's enterprise hooks are deployed by its MDM or team dashboard; " +
			"their file location is not verified against a Cursor binary, so celguard does not write it",
		Events:  []string{"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "afterShellExecution", "afterMCPExecution", "beforeSubmitPrompt", "stop"},
		Ignored: []string{"afterAgentResponse", "afterAgentThought", "afterFileEdit"},
		NoHook:  "what Cursor then does is not verified",
		new:     func(opts Options) Host { return &cursor{opts: opts} },
	},
	{
		Name: Copilot, Title: "GitHub Copilot CLI", Command: "copilot", TestedVersion: "1.0.102",
		// Its hook files are *.json in .github/hooks of the repository
		// and in ~/.copilot/hooks ($COPILOT_HOME/hooks); the repository's
		// load only in a folder the user trusted.
		SettingsDir: ".github/hooks", SettingsFile: "celguard.json", UserSettingsDir: ".copilot/hooks", HomeEnv: "COPILOT_HOME", UserDefault: true,
		// Policy hooks: machine-wide, root-owned, not group- or
		// world-writable, loaded before all others, not disabled by
		// disableAllHooks, whatever the folder's trust.
		Managed: map[string]string{
			"linux":   "/etc/github-copilot/policy.d/celguard.json",
			"darwin":  "/etc/github-copilot/policy.d/celguard.json",
			"windows": `C:\ProgramData\GitHub\Copilot\policy.d\celguard.json`,
		},
		Events:  []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SessionStart", "SessionEnd"},
		Ignored: []string{"Notification"},
		NoHook:  "Copilot CLI then refuses every call (a PreToolUse command hook that exits non-zero denies it)",
		new:     func(opts Options) Host { return &copilot{opts: opts} },
	},
	{
		Name: OpenCode, Title: "OpenCode", Command: "opencode", TestedVersion: "1.18.33",
		// Not a settings file: the plugin celguard writes (a JavaScript
		// module OpenCode loads from the plugins directory of the project's
		// .opencode and of ~/.config/opencode, $XDG_CONFIG_HOME/opencode).
		SettingsDir: ".opencode/plugins", SettingsFile: "celguard.js", UserSettingsDir: ".config/opencode/plugins", HomeEnv: "XDG_CONFIG_HOME",
		ManagedNone: "OpenCode's managed configuration directory (/etc/opencode) holds its opencode.json; " +
			"whether OpenCode loads plugins from it is not verified, so celguard does not write it",
		Events: OpencodeEvents,
		NoHook: "OpenCode then refuses every call (celguard's plugin refuses a call its command cannot answer)",
		new:    func(opts Options) Host { return &opencode{opts: opts} },
	},
}

// Hosts lists the host names New accepts.
func Hosts() []string {
	names := make([]string, len(hostTable))
	for i, h := range hostTable {
		names[i] = h.Name
	}
	return names
}

// HostTable returns every host's HostInfo, in the order of Hosts. Its
// Events are the caller's to change.
func HostTable() []HostInfo {
	out := make([]HostInfo, len(hostTable))
	for i, h := range hostTable {
		h.Events = append([]string(nil), h.Events...)
		h.Ignored = append([]string(nil), h.Ignored...)
		h.Managed = maps.Clone(h.Managed)
		out[i] = h
	}
	return out
}

// ErrUnknownHost is the error (errors.Is) of a host name that is not in
// the table; its message names the hosts there are.
var ErrUnknownHost = errors.New("unknown host")

// LookupHost returns the HostInfo of the host called name, or an error
// wrapping ErrUnknownHost. Its Events are the caller's to change.
func LookupHost(name string) (HostInfo, error) {
	for _, h := range hostTable {
		if h.Name == name {
			h.Events = append([]string(nil), h.Events...)
			h.Ignored = append([]string(nil), h.Ignored...)
			h.Managed = maps.Clone(h.Managed)
			return h, nil
		}
	}
	return HostInfo{}, fmt.Errorf("%w %q: want one of %s", ErrUnknownHost, name, strings.Join(Hosts(), ", "))
}

// New returns the host called name, or an error wrapping ErrUnknownHost.
func New(name string, opts Options) (Host, error) {
	h, err := LookupHost(name)
	if err != nil {
		return nil, err
	}
	return h.new(opts), nil
}
