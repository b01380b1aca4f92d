package setup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/internal/fileowner"
)

// Level is how a doctor check came out.
type Level int

// Levels, from good to bad.
const (
	// LevelOK: the check passed.
	LevelOK Level = iota
	// LevelWarn: something could not be checked or is not verified.
	LevelWarn
	// LevelFail: a hook does not guard as installed; Fix says what to do.
	LevelFail
)

func (l Level) String() string {
	switch l {
	case LevelOK:
		return "ok"
	case LevelWarn:
		return "warn"
	}
	return "FAIL"
}

// Check is one finding of Doctor about one host's settings file.
type Check struct {
	Host     string
	Settings string // the settings file checked; "" for the host as a whole
	// Scope is the settings file's scope (meaningless when Settings is "").
	Scope   InstallScope
	Level   Level
	Message string
	Fix     string // what to do, for a warning or a failure
}

// DoctorEnv is where Doctor looks.
type DoctorEnv struct {
	ProjectDir, HomeDir string
	// CodexHome is Codex's home ($CODEX_HOME); "" means HomeDir/.codex.
	CodexHome string
	// LookPath finds a host's command (exec.LookPath when nil).
	LookPath func(string) (string, error)
	// Version runs a host's command with --version and returns its output
	// (a run bounded by 30 s when nil: a Node.js CLI starts slowly on a
	// loaded machine).
	Version func(bin string) (string, error)
	// ManagedPath is host's managed settings file (ManagedPath on this
	// platform when nil); an error wrapping ErrNoManaged means none.
	ManagedPath func(host string) (string, error)
	// RunHook runs an installed hook command line on one event, as the
	// host would (RunHookCommand in ProjectDir, bounded by 30 s, when nil).
	RunHook func(command, dir string, event []byte) HookRun
	// Now is the clock (time.Now when nil); it names doctor's session.
	Now func() time.Time
}

func (e DoctorEnv) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Doctor checks celguard's hooks for each host in hosts, in the project's,
// the user's and the managed (administrator) settings: that a hook is
// registered for every event celguard needs, that the binary it runs exists
// at an absolute path the user (and so the agent) cannot replace, that the
// installed command answers one real decision (ProbeCommand, run as the
// host runs it: a hook that fails on it refuses, or lets through, every
// call), that it is installed in one scope only, that the host's version is
// one the hooks were tested with, and what the host needs beyond the
// settings (Codex: the hooks trusted, and which projects a project-scope
// install leaves unguarded; Gemini CLI and Claude Code: hooks not switched
// off). A host with no celguard hook in any file gets one LevelWarn check
// (LevelFail when required).
func Doctor(hosts []string, required bool, env DoctorEnv) []Check {
	if env.LookPath == nil {
		env.LookPath = exec.LookPath
	}
	if env.Version == nil {
		env.Version = runVersion
	}
	if env.CodexHome == "" {
		env.CodexHome = filepath.Join(env.HomeDir, ".codex")
	}
	if env.ManagedPath == nil {
		env.ManagedPath = func(host string) (string, error) { return ManagedPath(host, runtime.GOOS) }
	}
	if env.RunHook == nil {
		env.RunHook = func(command, dir string, event []byte) HookRun {
			return RunHookCommand(context.Background(), command, dir, event, probeTimeout)
		}
	}
	var out []Check
	for _, host := range hosts {
		var found []installed
		for _, scope := range []InstallScope{ScopeProject, ScopeUser, ScopeManaged} {
			path, err := settingsPathIn(host, scope, env)
			if errors.Is(err, ErrNoManaged) {
				continue
			}
			if err != nil {
				out = append(out, Check{Host: host, Scope: scope, Level: LevelFail, Message: err.Error()})
				continue
			}
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				out = append(out, Check{Host: host, Settings: path, Scope: scope, Level: LevelFail, Message: err.Error(), Fix: "make the settings file readable"})
				continue
			}
			checks, ours := doctorSettings(host, scope, path, data, env)
			for i := range checks {
				checks[i].Scope = scope
			}
			if ours {
				found = append(found, installed{scope: scope, path: path})
				out = append(out, checks...)
			}
		}
		if len(found) > 1 {
			out = append(out, duplicateCheck(host, found))
		}
		if host == hooks.Codex {
			out = append(out, codexUnguarded(found, env)...)
		}
		if len(found) == 0 {
			c := Check{Host: host, Level: LevelWarn, Message: "no celguard hook is installed", Fix: "celguard hook install " + host + " (--user for every project)"}
			if required {
				c.Level = LevelFail
			}
			out = append(out, c)
			continue
		}
		out = append(out, versionCheck(host, env))
		if c, ok := degradedCheck(host); ok {
			out = append(out, c)
		}
	}
	return out
}

// degradedCheck warns of the verdicts host does not honour exactly, per
// the capability matrix (hooks.Capabilities).
func degradedCheck(host string) (Check, bool) {
	info, _ := hooks.LookupHost(host)
	var parts []string
	version := ""
	for _, h := range hooks.Capabilities().Hosts {
		if h.Host != host {
			continue
		}
		version = h.Version
		for _, c := range h.Capabilities {
			if c.Support != hooks.SupportExact && c.Phase != "failure" {
				parts = append(parts, fmt.Sprintf("%s in the %s phase becomes %s", c.Verdict, c.Phase, c.Becomes))
			}
		}
	}
	if len(parts) == 0 {
		return Check{}, false
	}
	return Check{Host: host, Level: LevelWarn,
		Message: fmt.Sprintf("%s %s does not honour every verdict exactly: %s", info.Title, version, strings.Join(parts, "; ")),
		Fix:     "celguard lint --hosts " + host + " POLICIES warns at each rule this changes; celguard hosts prints the whole matrix"}, true
}

// installed is one settings file that holds celguard's hook for a host.
type installed struct {
	scope InstallScope
	path  string
}

// duplicateCheck is the failure of a hook installed in more than one
// scope: the host runs every one of them, so each call is decided, and
// counted, by each.
func duplicateCheck(host string, found []installed) Check {
	info, _ := hooks.LookupHost(host)
	var where []string
	keep := found[len(found)-1] // the managed one, else the user's
	for _, f := range found {
		where = append(where, f.scope.String()+": "+f.path)
	}
	var drop []string
	for _, f := range found {
		if f != keep {
			drop = append(drop, f.path)
		}
	}
	return Check{Host: host, Level: LevelFail,
		Message: fmt.Sprintf("celguard's hook is installed in %d scopes (%s): %s runs each of them for every event, so every call is decided, and counted against its limits, more than once", len(found), strings.Join(where, "; "), info.Title),
		Fix:     fmt.Sprintf("keep the %s one and remove celguard's entries from %s", keep.scope, strings.Join(drop, " and "))}
}

// codexUnguarded lists the projects Codex runs without celguard when its
// hook is installed in projects only: Codex loads a project's hooks.json
// only in a project it trusts, so every project without the hook, or not
// trusted, runs unguarded. The projects are those Codex's config.toml
// records, and the current one.
func codexUnguarded(found []installed, env DoctorEnv) []Check {
	if len(found) == 0 {
		return nil
	}
	for _, f := range found {
		if f.scope != ScopeProject {
			return nil
		}
	}
	toml, _ := os.ReadFile(filepath.Join(env.CodexHome, "config.toml"))
	_, projects := parseCodexConfig(string(toml))
	dirs := slices.Sorted(maps.Keys(projects))
	if !slices.Contains(dirs, env.ProjectDir) {
		dirs = append(dirs, env.ProjectDir)
	}
	var unguarded []string
	for _, dir := range dirs {
		why := ""
		data, err := os.ReadFile(filepath.Join(dir, ".codex", "hooks.json"))
		v, perr := parseOrdered(data)
		root, _ := v.(*object)
		switch {
		case err != nil || perr != nil || root == nil || len(ourCommands(hooks.Codex, root)) == 0:
			why = "no celguard hook"
		case projects[dir] != "trusted":
			why = "not trusted, so its hooks are skipped"
		}
		if why != "" {
			unguarded = append(unguarded, dir+" ("+why+")")
		}
	}
	msg := "celguard's Codex hook is installed in projects only: Codex runs every project without it, or that it does not trust, unguarded, and every project it has not recorded"
	if len(unguarded) > 0 {
		msg += "; unguarded: " + strings.Join(unguarded, ", ")
	}
	return []Check{{Host: hooks.Codex, Level: LevelWarn, Message: msg,
		Fix: "celguard hook install codex --user: Codex runs the user's hooks in every project"}}
}

func settingsPathIn(host string, scope InstallScope, env DoctorEnv) (string, error) {
	if scope == ScopeManaged {
		return env.ManagedPath(host)
	}
	if host == hooks.Codex && scope == ScopeUser {
		info, _ := hooks.LookupHost(host)
		return filepath.Join(env.CodexHome, info.SettingsFile), nil
	}
	return SettingsPath(host, scope, env.ProjectDir, env.HomeDir)
}

// doctorSettings checks one settings file; ours is false when it holds no
// celguard hook for host.
func doctorSettings(host string, scope InstallScope, path string, data []byte, env DoctorEnv) (checks []Check, ours bool) {
	add := func(l Level, msg, fix string) {
		checks = append(checks, Check{Host: host, Settings: path, Scope: scope, Level: l, Message: msg, Fix: fix})
	}
	flag := ""
	switch scope {
	case ScopeUser:
		flag = " --user"
	case ScopeManaged:
		flag = " --managed"
	case ScopeProject:
		if host == hooks.Codex {
			flag = " --project"
		}
	}
	reinstall := "celguard hook install " + host + flag + " (with the options you use)"
	if host == hooks.OpenCode {
		c, ok := opencodeCommand(data)
		if !ok {
			return nil, false
		}
		add(LevelOK, "a celguard hook for every event it needs (celguard's OpenCode plugin: "+strings.Join(HookEvents(host), ", ")+")", "")
		checks = append(checks, binaryChecks(host, path, c, reinstall)...)
		checks = append(checks, probeCheck(host, path, scope, c, env))
		return checks, true
	}
	v, err := parseOrdered(data)
	root, _ := v.(*object)
	if err != nil || root == nil {
		return []Check{{Host: host, Settings: path, Scope: scope, Level: LevelFail, Message: "the settings are not a JSON object", Fix: "repair the file, then " + reinstall}}, true
	}
	commands := ourCommands(host, root)
	if len(commands) == 0 {
		return nil, false
	}
	var missing, present []string
	distinct := map[string]bool{}
	for _, ev := range HookEvents(host) {
		if cs := commands[ev]; len(cs) > 0 {
			present = append(present, ev)
			for _, c := range cs {
				distinct[c] = true
			}
		} else {
			missing = append(missing, ev)
		}
	}
	if len(missing) > 0 {
		add(LevelFail, "no celguard hook for "+strings.Join(missing, ", "), reinstall)
	} else {
		add(LevelOK, "a celguard hook for every event it needs ("+strings.Join(present, ", ")+")", "")
	}
	if len(distinct) > 1 {
		add(LevelWarn, fmt.Sprintf("the events run %d different celguard commands", len(distinct)), reinstall)
	}
	for _, c := range slices.Sorted(maps.Keys(distinct)) {
		for _, bc := range binaryChecks(host, path, c, reinstall) {
			bc.Scope = scope
			checks = append(checks, bc)
		}
		checks = append(checks, probeCheck(host, path, scope, c, env))
	}
	switch host {
	case hooks.Codex:
		checks = append(checks, codexTrustChecks(path, scope, data, env)...)
	case hooks.Gemini:
		if hc, _ := root.get("hooksConfig"); hc != nil {
			if o, _ := hc.(*object); o != nil {
				if en, ok := o.get("enabled"); ok && en == false {
					add(LevelFail, `hooksConfig.enabled is false: Gemini CLI runs no hook`, `remove "enabled": false from hooksConfig`)
				}
				if dv, _ := o.get("disabled"); dv != nil {
					for _, n := range asList(dv) {
						if n == "celguard" {
							add(LevelFail, `hooksConfig.disabled names celguard: Gemini CLI skips its hooks`, `remove "celguard" from hooksConfig.disabled`)
						}
					}
				}
			}
		}
	case hooks.ClaudeCode:
		if d, _ := root.get("disableAllHooks"); d == true {
			add(LevelFail, "disableAllHooks is true: Claude Code runs no hook", `remove "disableAllHooks": true`)
		}
	}
	return checks, true
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// ourCommands maps each event to the commands of celguard's handlers for
// host in a settings document.
func ourCommands(host string, root *object) map[string][]string {
	hc := hostConfigs[host]
	hv, _ := root.get("hooks")
	hooksObj, _ := hv.(*object)
	out := map[string][]string{}
	if hooksObj == nil {
		return out
	}
	for _, event := range hooksObj.keys {
		for _, entry := range asList(hooksObj.vals[event]) {
			e, _ := entry.(*object)
			if e == nil {
				continue
			}
			handlers := []any{e}
			if !hc.flat {
				hl, _ := e.get("hooks")
				handlers = asList(hl)
			}
			for _, h := range handlers {
				if ho, _ := h.(*object); ho != nil && isOurs(ho, host) {
					c, _ := ho.get(hc.key())
					out[event] = append(out[event], c.(string))
				}
			}
		}
	}
	return out
}

// commandBinary is the first word of a hook command line, unquoted as sh
// would (the quoting shell.Quote writes).
func commandBinary(command string) string {
	s := strings.TrimLeft(command, " \t")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			return b.String()
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				b.WriteString(s[i+1:])
				return b.String()
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// noHook says what host does when a hook's command cannot start.
func noHook(host string) string {
	info, _ := hooks.LookupHost(host)
	return info.NoHook
}

// binaryChecks checks the binary a hook command runs, and says whether it
// is the lean client (which runs the celguard beside it: checked too) or
// celguard hook.
func binaryChecks(host, path, command, reinstall string) []Check {
	return checkBinary(host, path, commandBinary(command), reinstall)
}

// checkBinary is binaryChecks of the binary bin.
func checkBinary(host, path, bin, reinstall string) []Check {
	fail := func(msg, fix string) []Check {
		return []Check{{Host: host, Settings: path, Level: LevelFail, Message: msg, Fix: fix}}
	}
	const safe = "install celguard where only an administrator can write (sudo install -m 0755 celguard /usr/local/bin/), then run /usr/local/bin/celguard hook install again"
	if !filepath.IsAbs(bin) {
		return fail(fmt.Sprintf("the hook runs %q, looked up on PATH when it runs: a binary put earlier on PATH (by the agent too) runs instead", bin), safe)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return fail(fmt.Sprintf("the hook runs %s, which cannot be run (%v); %s", bin, err, noHook(host)), "install celguard at "+bin+", or "+reinstall)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fail(fmt.Sprintf("the hook runs %s, which is not an executable file; %s", bin, noHook(host)), "install celguard at "+bin+", or "+reinstall)
	}
	if uid := os.Getuid(); uid > 0 && fileowner.Supported {
		for p := filepath.Clean(bin); ; p = filepath.Dir(p) {
			if pfi, err := os.Stat(p); err == nil {
				if owner, ok := fileowner.UID(pfi); ok && owner == uint32(uid) {
					return fail(fmt.Sprintf("the hook runs %s, and %s is yours: you (and so the agent) can make it writable", bin, p), safe)
				}
			}
			if parent := filepath.Dir(p); parent == p {
				break
			}
		}
	}
	if ws := BinaryWarnings(bin); len(ws) > 0 {
		msg, _, _ := strings.Cut(ws[0], "; install celguard")
		return fail(msg, safe)
	}
	msg := bin + " exists, and neither it nor a directory above it can be changed by you (or the agent)"
	if !isLean(bin) {
		how := "; it is the whole celguard for every event"
		if _, lean := LeanBeside(bin); lean {
			how += " (" + LeanName + " is beside it: 'celguard hook install' again runs the lean client instead)"
		}
		return []Check{{Host: host, Settings: path, Level: LevelOK, Message: msg + how}}
	}
	// The lean client runs the celguard beside it on any doubt: that one
	// must be as safe.
	full := filepath.Join(filepath.Dir(bin), "celguard")
	if runtime.GOOS == "windows" {
		full += ".exe"
	}
	for _, c := range checkBinary(host, path, full, reinstall) {
		if c.Level != LevelOK {
			c.Message = "beside the lean client: " + c.Message
			return []Check{c}
		}
	}
	return []Check{{Host: host, Settings: path, Level: LevelOK, Message: msg + "; it is the lean client: it asks the decision daemon, checks its answer, and runs " +
		full + " hook otherwise (docs/hooks.md)"}}
}

// codexTrustChecks checks that Codex trusts celguard's hooks in path, as
// recorded in its config.toml.
func codexTrustChecks(path string, scope InstallScope, data []byte, env DoctorEnv) []Check {
	config := filepath.Join(env.CodexHome, "config.toml")
	entries, err := CodexTrustEntries(path, data)
	if err != nil {
		return []Check{{Host: hooks.Codex, Settings: path, Level: LevelFail, Message: err.Error()}}
	}
	toml, err := os.ReadFile(config)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return []Check{{Host: hooks.Codex, Settings: path, Level: LevelFail, Message: err.Error(), Fix: "make " + config + " readable"}}
	}
	states, projects := parseCodexConfig(string(toml))
	var checks []Check
	var fix strings.Builder
	var untrusted, changed, disabled []string
	for _, e := range entries {
		st, ok := states[e.Key]
		switch {
		case !ok || st.hash == "":
			untrusted = append(untrusted, e.Event)
		case st.hash != e.Hash:
			changed = append(changed, e.Event)
		}
		if ok && st.disabled {
			disabled = append(disabled, e.Event)
		}
		if !ok || st.hash != e.Hash {
			fix.WriteString(e.TOML())
		}
	}
	trustFix := "trust them with /hooks in an interactive codex session, or put these lines in " + config + " (replacing older entries of the same keys):\n" + fix.String()
	if len(untrusted) > 0 {
		checks = append(checks, Check{Host: hooks.Codex, Settings: path, Level: LevelFail, Message: "Codex has not trusted celguard's hooks for " + strings.Join(untrusted, ", ") + ": it skips them without a word and runs every call unguarded", Fix: trustFix})
	}
	if len(changed) > 0 {
		checks = append(checks, Check{Host: hooks.Codex, Settings: path, Level: LevelFail, Message: "celguard's hooks for " + strings.Join(changed, ", ") + " changed since Codex trusted them (the command line differs): Codex skips them", Fix: trustFix})
	}
	if len(disabled) > 0 {
		checks = append(checks, Check{Host: hooks.Codex, Settings: path, Level: LevelFail, Message: "celguard's hooks for " + strings.Join(disabled, ", ") + " are disabled in " + config, Fix: "remove enabled = false from their [hooks.state] entries"})
	}
	if len(untrusted)+len(changed) == 0 {
		checks = append(checks, Check{Host: hooks.Codex, Settings: path, Level: LevelOK, Message: "Codex trusts every celguard hook as installed"})
	}
	if scope == ScopeProject {
		dir := filepath.Dir(filepath.Dir(path))
		if projects[dir] != "trusted" {
			checks = append(checks, Check{Host: hooks.Codex, Settings: path, Level: LevelFail,
				Message: "Codex loads " + path + " only in a project it trusts, and " + dir + " is not trusted in " + config,
				Fix:     fmt.Sprintf("trust the project when codex asks, or add to %s:\n[projects.%s]\ntrust_level = \"trusted\"\n", config, strconv.Quote(dir))})
		}
	}
	return checks
}

type codexHookState struct {
	hash     string
	disabled bool
}

var (
	tomlHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`) })
	tomlKV     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*=\s*(.+?)\s*(#.*)?$`) })
)

// parseCodexConfig reads the hook states ([hooks.state."KEY"] with
// trusted_hash and enabled) and the projects' trust levels ([projects."DIR"]
// with trust_level) of a Codex config.toml. It reads only that table form,
// the one Codex writes; other TOML is skipped.
func parseCodexConfig(toml string) (map[string]codexHookState, map[string]string) {
	states := map[string]codexHookState{}
	projects := map[string]string{}
	var table []string
	for _, line := range strings.Split(toml, "\n") {
		if m := tomlHeader().FindStringSubmatch(line); m != nil && !strings.HasPrefix(strings.TrimSpace(line), "[[") {
			table = splitTOMLKey(m[1])
			continue
		}
		m := tomlKV().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		val := tomlString(m[2])
		switch {
		case len(table) == 3 && table[0] == "hooks" && table[1] == "state":
			st := states[table[2]]
			switch m[1] {
			case "trusted_hash":
				st.hash = val
			case "enabled":
				st.disabled = strings.TrimSpace(m[2]) == "false"
			}
			states[table[2]] = st
		case len(table) == 2 && table[0] == "projects" && m[1] == "trust_level":
			projects[table[1]] = val
		}
	}
	return states, projects
}

// splitTOMLKey splits a dotted TOML key, unquoting its parts.
func splitTOMLKey(k string) []string {
	var parts []string
	for k = strings.TrimSpace(k); k != ""; {
		var part string
		switch k[0] {
		case '"':
			end := 1
			for end < len(k) && k[end] != '"' {
				if k[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(k) {
				return nil
			}
			part = tomlString(k[:end+1])
			k = k[end+1:]
		case '\'':
			end := strings.IndexByte(k[1:], '\'')
			if end < 0 {
				return nil
			}
			part = k[1 : end+1]
			k = k[end+2:]
		default:
			end := strings.IndexAny(k, ". \t")
			if end < 0 {
				end = len(k)
			}
			part = k[:end]
			k = k[end:]
		}
		parts = append(parts, part)
		k = strings.TrimLeft(strings.TrimSpace(k), ".")
		k = strings.TrimSpace(k)
	}
	return parts
}

// tomlString unquotes a TOML string value (basic or literal); anything else
// is returned as written.
func tomlString(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if s, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		return s
	}
	return v
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`) })

// versionCheck compares the host's version with the one tested.
func versionCheck(host string, env DoctorEnv) Check {
	c := Check{Host: host, Level: LevelWarn}
	info, _ := hooks.LookupHost(host)
	tested, ok := info.TestedVersion, info.TestedVersion != ""
	name := info.Command
	bin, err := env.LookPath(name)
	if err != nil {
		c.Message = fmt.Sprintf("%s is not on PATH, so its version was not checked", name)
		if ok {
			c.Fix = "run doctor where " + name + " is on PATH; celguard's hooks were tested with version " + tested
		}
		return c
	}
	out, err := env.Version(bin)
	m := versionRE().FindStringSubmatch(out)
	if err != nil || m == nil {
		c.Message = fmt.Sprintf("%s --version did not say its version (%v)", bin, err)
		return c
	}
	got := m[0]
	if !ok {
		c.Message = fmt.Sprintf("%s %s: celguard's hooks for it are not tested against the real host", name, got)
		return c
	}
	if compareVersions(got, tested) < 0 {
		c.Message = fmt.Sprintf("%s %s is older than %s, the version celguard's hooks were tested with: an event or answer they rely on may be missing", name, got, tested)
		c.Fix = "update " + name + " to " + tested + " or later"
		return c
	}
	c.Level = LevelOK
	c.Message = fmt.Sprintf("%s %s (hooks tested with %s)", name, got, tested)
	return c
}

// compareVersions compares two x.y.z versions numerically.
func compareVersions(a, b string) int {
	am, bm := versionRE().FindStringSubmatch(a), versionRE().FindStringSubmatch(b)
	if am == nil || bm == nil {
		return strings.Compare(a, b)
	}
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(am[i])
		y, _ := strconv.Atoi(bm[i])
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func runVersion(bin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	return string(out), err
}
