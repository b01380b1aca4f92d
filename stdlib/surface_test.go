package stdlib

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinnedSurface is every function the stdlib adds to a bare environment, with
// its overloads as "id(arg types) -> result". Changing it is a deliberate act:
// update docs/stdlib.md, bump LatestVersion for additions, and never change or
// remove a signature that shipped.
var pinnedSurface = map[string][]string{
	"canonical": {"canonical_dyn(dyn) -> string"},

	"glob.couldMatch":      {"glob_couldMatch_string_string(string, string) -> bool"},
	"glob.couldMatchShell": {"glob_couldMatchShell_string_string(string, string) -> bool"},
	"glob.match":           {"glob_match_string_string(string, string) -> bool"},
	"glob.matchAny":        {"glob_matchAny_string_list(string, list(string)) -> bool"},
	"glob.matchName":       {"glob_matchName_string_string(string, string) -> bool"},
	"glob.valid":           {"glob_valid_string(string) -> bool"},

	"hash.sha256": {"hash_sha256_bytes(bytes) -> string", "hash_sha256_string(string) -> string"},
	"hash.short":  {"hash_short_dyn(dyn) -> string"},
	"hash.value":  {"hash_value_dyn(dyn) -> string"},

	"mcp.server": {"mcp_server_string(string) -> string"},
	"mcp.tool":   {"mcp_tool_string(string) -> string"},

	"path.abs":      {"path_abs_string_string(string, string) -> string"},
	"path.base":     {"path_base_string(string) -> string"},
	"path.clean":    {"path_clean_string(string) -> string"},
	"path.dir":      {"path_dir_string(string) -> string"},
	"path.expand":   {"path_expand_string(string) -> string"},
	"path.ext":      {"path_ext_string(string) -> string"},
	"path.isAbs":    {"path_isAbs_string(string) -> bool"},
	"path.join":     {"path_join_string_string(string, string) -> string"},
	"path.normal":   {"path_normal_string(string) -> string", "path_normal_string_bool(string, bool) -> string"},
	"path.segments": {"path_segments_string(string) -> list(string)"},
	"path.within":   {"path_within_string_string(string, string) -> bool", "path_within_string_string_bool(string, string, bool) -> bool"},

	"secrets.find":   {"secrets_find_string(string) -> list(celguard.secrets.Finding)"},
	"secrets.has":    {"secrets_has_string(string) -> bool"},
	"secrets.redact": {"secrets_redact_string(string) -> string"},

	"shell.commands":      {"shell_commands_string(string) -> list(celguard.shell.Command)"},
	"shell.hasFlag":       {"shell_hasFlag_command_string(celguard.shell.Command, string) -> bool", "shell_hasFlag_map_string(map(string, dyn), string) -> bool"},
	"shell.hasFlags":      {"shell_hasFlags_command_list(celguard.shell.Command, list(string)) -> bool", "shell_hasFlags_map_list(map(string, dyn), list(string)) -> bool"},
	"shell.hasPrefix":     {"shell_hasPrefix_command_list(celguard.shell.Command, list(string)) -> bool", "shell_hasPrefix_command_string(celguard.shell.Command, string) -> bool", "shell_hasPrefix_map_list(map(string, dyn), list(string)) -> bool", "shell_hasPrefix_map_string(map(string, dyn), string) -> bool"},
	"shell.hasSubcommand": {"shell_hasSubcommand_command_list(celguard.shell.Command, list(string)) -> bool", "shell_hasSubcommand_command_string(celguard.shell.Command, string) -> bool", "shell_hasSubcommand_map_list(map(string, dyn), list(string)) -> bool", "shell_hasSubcommand_map_string(map(string, dyn), string) -> bool"},
	"shell.parse":         {"shell_parse_string(string) -> celguard.shell.Parse"},
	"shell.programs":      {"shell_programs_string(string) -> list(string)"},
	"shell.dirs":          {"shell_dirs_command(celguard.shell.Command) -> list(string)"},
	"shell.hazard":        {"shell_hazard_command(celguard.shell.Command) -> string"},
	"shell.writes":        {"shell_writes_command(celguard.shell.Command) -> list(string)", "shell_writes_map(map(string, dyn)) -> list(string)"},

	"url.host":        {"url_host_string(string) -> string"},
	"url.hostMatches": {"url_hostMatches_string_list(string, list(string)) -> bool", "url_hostMatches_string_string(string, string) -> bool"},
	"url.parse":       {"url_parse_string(string) -> celguard.url.URL"},

	"sql.classify": {"sql_classify_string(string) -> celguard.sql.Result"},

	"toolchain.analyze":     {"toolchain_analyze_string_string(string, string) -> celguard.toolchain.Analysis"},
	"toolchain.analyzeEdit": {"toolchain_analyzeEdit_string_string(string, string) -> celguard.toolchain.Analysis"},
	"toolchain.files":       {"toolchain_files_map(map(string, dyn)) -> list(celguard.toolchain.File)"},
	"toolchain.runners":     {"toolchain_runners_string(string) -> list(string)"},
	"toolchain.runs":        {"toolchain_runs_string(string) -> bool"},
}

// since is the stdlib version each function arrived in, when not 1.
var since = map[string]uint32{"glob.couldMatch": 2, "glob.couldMatchShell": 2, "shell.writes": 2, "shell.hazard": 3, "shell.dirs": 3, "mcp.server": 3, "mcp.tool": 3, "toolchain.runs": 4, "toolchain.analyze": 4, "toolchain.analyzeEdit": 4, "toolchain.files": 4, "toolchain.runners": 4, "sql.classify": 4}

func sinceVersion(name string) uint32 {
	if v, ok := since[name]; ok {
		return v
	}
	return 1
}

// surface lists the functions env adds over a bare environment.
func surface(t *testing.T, env *cel.Env) map[string][]string {
	t.Helper()
	bare, err := cel.NewEnv()
	require.NoError(t, err)
	base := bare.Functions()
	out := map[string][]string{}
	for name, fn := range env.Functions() {
		if _, ok := base[name]; ok {
			continue
		}
		var sigs []string
		for _, o := range fn.OverloadDecls() {
			var args []string
			for _, a := range o.ArgTypes() {
				args = append(args, a.String())
			}
			sigs = append(sigs, o.ID()+"("+strings.Join(args, ", ")+") -> "+o.ResultType().String())
		}
		slices.Sort(sigs)
		out[name] = sigs
	}
	return out
}

func TestSurfaceIsPinned(t *testing.T) {
	l := testLib(t)
	env, err := cel.NewEnv(l.EnvOptions()...)
	require.NoError(t, err)
	assert.Equal(t, pinnedSurface, surface(t, env),
		"the stdlib function set changed; update pinnedSurface and docs/stdlib.md deliberately")

	// Naming conventions: namespaced functions, overload ids <ns>_<fn>_<argtypes>.
	for _, d := range l.registry() {
		assert.True(t, strings.HasPrefix(d.name, d.ns+"."), d.name)
		for _, o := range d.ovs {
			assert.True(t, strings.HasPrefix(o.id, strings.ReplaceAll(d.name, ".", "_")+"_"), o.id)
		}
	}
}

func TestLibraryNames(t *testing.T) {
	l := testLib(t)
	env, err := cel.NewEnv(l.EnvOptions()...)
	require.NoError(t, err)
	var ours []string
	for _, lib := range env.Libraries() {
		if strings.HasPrefix(lib, "celguard.") {
			ours = append(ours, lib)
		}
	}
	slices.Sort(ours)
	assert.Equal(t, []string{"celguard.lib.canonical", "celguard.lib.glob", "celguard.lib.hash", "celguard.lib.mcp", "celguard.lib.path",
		"celguard.lib.secrets", "celguard.lib.shell", "celguard.lib.sql", "celguard.lib.toolchain", "celguard.lib.url"}, ours)
	// LibraryNames lists them without an environment, and so at every
	// version (a library's functions may arrive later, not the library).
	names := LibraryNames()
	slices.Sort(names)
	assert.Equal(t, ours, names)
	for _, v := range []uint32{1, LatestVersion} {
		env, err := cel.NewEnv(testLib(t, WithVersion(v)).EnvOptions()...)
		require.NoError(t, err)
		var at []string
		for _, lib := range env.Libraries() {
			if strings.HasPrefix(lib, "celguard.") {
				at = append(at, lib)
			}
		}
		slices.Sort(at)
		assert.Equal(t, names, at, "version %d", v)
	}
}

func TestVersionPinsFunctions(t *testing.T) {
	l := testLib(t, WithVersion(1))
	env, err := cel.NewEnv(l.EnvOptions()...)
	require.NoError(t, err)
	assert.Len(t, surface(t, env), len(pinnedSurface)-len(since))
	for name := range since {
		assert.NotContains(t, surface(t, env), name, "%s arrived after version 1", name)
	}
}

// TestDocs checks that every function is documented the ext way in the Go
// source (# name heading, signature, Examples, version) and in
// docs/stdlib.md.
func TestDocs(t *testing.T) {
	var src strings.Builder
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src.Write(b)
	}
	md, err := os.ReadFile(filepath.Join("..", "docs", "stdlib.md"))
	require.NoError(t, err)
	for name, sigs := range pinnedSurface {
		sec := docSection(src.String(), "// # "+name+"\n")
		if !assert.NotEmpty(t, sec, "no '# %s' doc section in the Go source", name) {
			continue
		}
		assert.Contains(t, sec, "//\t"+name+"(", "%s: no signature line", name)
		assert.Contains(t, sec, "// Examples:", "%s: no examples", name)
		v := fmt.Sprint(sinceVersion(name))
		assert.Contains(t, sec, "Introduced in stdlib version "+v+".", "%s: no version", name)
		assert.Len(t, regexp.MustCompile(`(?m)^//\t`+regexp.QuoteMeta(name)+`\(.*\) -> <`).FindAllString(sec, -1), len(sigs),
			"%s: one signature line per overload", name)

		mdSec := docSection(string(md), "### "+name+"\n")
		if !assert.NotEmpty(t, mdSec, "docs/stdlib.md has no '### %s' section", name) {
			continue
		}
		assert.Contains(t, mdSec, name+"(", name)
		assert.Contains(t, mdSec, "Since: version "+v, name)
		assert.Contains(t, mdSec, "Example", name)
	}
}

// docSection returns the text from heading to the next heading of the same
// kind.
func docSection(s, heading string) string {
	i := strings.Index(s, heading)
	if i < 0 {
		return ""
	}
	rest := s[i+len(heading):]
	marker := heading[:strings.Index(heading, "#")+1]
	if j := strings.Index(rest, marker+" "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
