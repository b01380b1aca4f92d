package toolchain

import (
	"path"
	"slices"
	"strings"
	"sync"
)

// Format is how a family's content is read.
type Format string

// The formats Analyze reads.
const (
	// FormatMake: make recipes (tab-indented lines), $(shell ...) and !=
	// assignments; variables defined in the file are expanded.
	FormatMake Format = "make"
	// FormatJust: a justfile's indented recipe lines and backtick
	// assignments.
	FormatJust Format = "just"
	// FormatShell: the whole file is a shell script (a git hook, .envrc); a
	// shebang naming another interpreter makes it code of that language.
	FormatShell Format = "shell"
	// FormatJSON: JSON (JSON with comments and trailing commas too); the
	// family's Keys name the values that are commands.
	FormatJSON Format = "json"
	// FormatTOML: TOML; Keys as for JSON.
	FormatTOML Format = "toml"
	// FormatYAML: YAML; Keys as for JSON.
	FormatYAML Format = "yaml"
	// FormatINI: git-config and npmrc style key = value lines under
	// [section] or [section "sub"] headers; Keys as for JSON, with the
	// section and key joined by dots.
	FormatINI Format = "ini"
	// FormatGo: Go source, whose //go:generate lines go generate runs.
	FormatGo Format = "go"
	// FormatMarkdown: an agent's instruction file; its fenced shell blocks
	// and shell-like inline code are commands the agent is told to run.
	FormatMarkdown Format = "markdown"
	// FormatCode: program code in the family's Lang, passed only by the
	// conservative capability check of that language.
	FormatCode Format = "code"
)

// Family is one kind of workspace file a toolchain runs or loads.
type Family struct {
	// Name identifies the family ("make", "npm-package", ...).
	Name string
	// Ecosystem groups families in the documented table.
	Ecosystem string
	// Patterns are the file names: a pattern without "/" matches the base
	// name, one with "/" the path's last components; path.Match syntax,
	// compared case-insensitively (a case-insensitive file system opens
	// MAKEFILE as Makefile).
	Patterns []string
	// Exclude are patterns, of the same form, that are not this family
	// (a hook manager's own generated files, sample hooks).
	Exclude []string
	// Format is how the content is read.
	Format Format
	// Lang is the language of FormatCode and of a shebang script.
	Lang string
	// Keys name the values that are commands, for the structured formats:
	// a dotted path whose "*" matches any one key or list index and "**"
	// any number of them, then ":" and a mode: cmd (the default: a string
	// is a command, a list or map holds commands), argv (a list is one
	// command's words), cmdargs (a command string and its sibling "args"
	// list), cargo (a cargo alias: "cargo " + value), uses (a reference to
	// code fetched from elsewhere: an action, a hook repository, a
	// feature), ukeys (the map's keys are such references), code (the
	// value names code that runs), flag (any value is unproven), bang (a
	// value starting with "!" is a command, as git's aliases).
	Keys []string
	// RunBy says who runs the file, and when.
	RunBy string
}

// Table is every family, per ecosystem. It is the single source of
// docs/policies.md's table (TestTableDocumented).
var Table = []Family{
	// --- make and task runners ---------------------------------------------
	{Name: "make", Ecosystem: "make", Patterns: []string{"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"}, Format: FormatMake,
		RunBy: "make: every recipe of the targets built; $(shell ...) and != when the file is read"},
	{Name: "just", Ecosystem: "make", Patterns: []string{"justfile", ".justfile", "*.just"}, Format: FormatJust,
		RunBy: "just: a recipe's lines; backtick assignments when the file is read"},
	{Name: "taskfile", Ecosystem: "make", Patterns: []string{"Taskfile.yml", "Taskfile.yaml", "Taskfile.dist.yml", "Taskfile.dist.yaml"}, Format: FormatYAML,
		Keys:  []string{"tasks.*.cmds", "tasks.*.cmds.*.cmd", "tasks.*.cmd", "tasks.*.status", "tasks.*.preconditions.*.sh", "vars.*.sh", "tasks.*.vars.*.sh"},
		RunBy: "task: a task's cmds, status and preconditions"},
	{Name: "mise", Ecosystem: "make", Patterns: []string{"mise.toml", ".mise.toml", "mise.local.toml", ".config/mise.toml", ".mise/config.toml", "mise/config.toml"}, Format: FormatTOML,
		Keys:  []string{"tasks.*", "tasks.*.run", "hooks.*", "hooks.*.script", "env._.source:flag", "env._.file:flag"},
		RunBy: "mise: tasks (mise run), hooks on entering the directory"},
	// --- node ----------------------------------------------------------------
	{Name: "npm-package", Ecosystem: "node", Patterns: []string{"package.json"}, Format: FormatJSON,
		Keys:  []string{"scripts.*", "lint-staged.*", "husky.hooks.*", "simple-git-hooks.*", "gitHooks.*", "nano-staged.*"},
		RunBy: "npm/yarn/pnpm/bun: lifecycle scripts (preinstall, install, postinstall, prepare, pretest, test, ...) on install and test, any script on run; hook managers' hooks on git commit"},
	{Name: "npmrc", Ecosystem: "node", Patterns: []string{".npmrc"}, Format: FormatINI,
		Keys:  []string{"script-shell", "shell", "git", "node-options:flag", "onload-script:code", "init-module:code"},
		RunBy: "npm: the shell every script runs in, node's options"},
	{Name: "yarnrc", Ecosystem: "node", Patterns: []string{".yarnrc.yml", ".yarnrc.yaml"}, Format: FormatYAML,
		Keys:  []string{"yarnPath:code", "plugins:code", "plugins.*:code"},
		RunBy: "yarn: yarnPath replaces yarn itself, plugins load on every yarn command"},
	{Name: "yarnrc-classic", Ecosystem: "node", Patterns: []string{".yarnrc"}, Format: FormatINI,
		Keys: []string{"yarn-path:code"}, RunBy: "yarn 1: yarn-path replaces yarn itself"},
	{Name: "deno", Ecosystem: "node", Patterns: []string{"deno.json", "deno.jsonc"}, Format: FormatJSON,
		Keys: []string{"tasks.*", "tasks.*.command"}, RunBy: "deno task"},
	{Name: "nx-project", Ecosystem: "node", Patterns: []string{"project.json"}, Format: FormatJSON,
		Keys:  []string{"targets.*.options.command", "targets.*.options.commands", "targets.*.options.commands.*.command"},
		RunBy: "nx: run-commands targets"},
	{Name: "lint-staged", Ecosystem: "node", Patterns: []string{".lintstagedrc", ".lintstagedrc.json"}, Format: FormatJSON,
		Keys: []string{"*"}, RunBy: "lint-staged, from a pre-commit hook: the commands run on staged files"},
	{Name: "js-config", Ecosystem: "node", Format: FormatCode, Lang: "javascript",
		Patterns: []string{".pnpmfile.cjs", "pnpmfile.js", "gulpfile.*", "Gruntfile.*", "eslint.config.*", ".eslintrc.js", ".eslintrc.cjs",
			"jest.config.*", "vitest.config.*", "vitest.workspace.*", "vite.config.*", "webpack.config.*", "rollup.config.*", "babel.config.*",
			".babelrc.js", ".babelrc.cjs", "prettier.config.*", ".prettierrc.js", ".prettierrc.cjs", ".prettierrc.mjs", "next.config.*",
			"nuxt.config.*", "svelte.config.*", "astro.config.*", "postcss.config.*", "tailwind.config.*", "playwright.config.*",
			"cypress.config.*", "karma.conf.*", ".mocharc.js", ".mocharc.cjs", "commitlint.config.*", "lint-staged.config.*",
			".lintstagedrc.js", ".lintstagedrc.cjs", ".lintstagedrc.mjs", "stylelint.config.*", "tsup.config.*", "esbuild.config.*"},
		RunBy: "the build tool, linter or test runner that loads it, on every run"},
	// --- rust ----------------------------------------------------------------
	{Name: "cargo-build-script", Ecosystem: "rust", Patterns: []string{"build.rs"}, Format: FormatCode, Lang: "rust",
		RunBy: "cargo build/test/check/run: compiled and run before the crate"},
	{Name: "cargo-config", Ecosystem: "rust", Patterns: []string{".cargo/config.toml", ".cargo/config"}, Format: FormatTOML,
		Keys: []string{"target.*.runner:argv", "target.*.linker", "build.rustc-wrapper", "build.rustc-workspace-wrapper", "build.rustc", "build.rustdoc",
			"alias.*:cargo", "registry.credential-provider:argv", "registry.global-credential-providers", "registries.*.credential-provider:argv",
			"source.*.replace-with:flag", "env:env", "host.runner:argv", "host.linker"},
		RunBy: "cargo: runner runs every test and binary (cargo test/run), wrappers and linkers every build, aliases expand cargo commands"},
	{Name: "cargo-manifest", Ecosystem: "rust", Patterns: []string{"Cargo.toml"}, Format: FormatTOML,
		Keys: []string{"package.build:build", "package.links:flag"}, RunBy: "cargo: a build script other than build.rs"},
	{Name: "rust-toolchain", Ecosystem: "rust", Patterns: []string{"rust-toolchain.toml", "rust-toolchain"}, Format: FormatTOML,
		Keys: []string{"toolchain.path:flag"}, RunBy: "rustup: a toolchain path replaces cargo and rustc"},
	// --- python ----------------------------------------------------------------
	{Name: "python-build", Ecosystem: "python", Patterns: []string{"setup.py", "conftest.py", "noxfile.py", "dodo.py", "fabfile.py", "sitecustomize.py", "usercustomize.py", "*.pth"},
		Format: FormatCode, Lang: "python",
		RunBy: "pip install / python -m build (setup.py), pytest (conftest.py), nox, doit, fab; every python start (sitecustomize, .pth)"},
	{Name: "pyproject", Ecosystem: "python", Patterns: []string{"pyproject.toml"}, Format: FormatTOML,
		Keys: []string{"build-system.build-backend:backend", "build-system.backend-path:code", "tool.poe.tasks.*", "tool.poe.tasks.*.cmd", "tool.poe.tasks.*.shell",
			"tool.poe.tasks.*.script:code", "tool.pdm.scripts.*", "tool.pdm.scripts.*.cmd", "tool.pdm.scripts.*.shell", "tool.pdm.scripts.*.call:code",
			"tool.taskipy.tasks.*", "tool.taskipy.tasks.*.cmd", "tool.hatch.envs.*.scripts.*", "tool.rye.scripts.*", "tool.rye.scripts.*.cmd",
			"tool.setuptools.cmdclass:code", "tool.hatch.build.hooks.custom:code", "tool.hatch.build.targets.*.hooks.custom:code"},
		RunBy: "pip install / uv / python -m build (the build backend), poe, pdm run, task, hatch run, rye run"},
	{Name: "tox", Ecosystem: "python", Patterns: []string{"tox.ini"}, Format: FormatINI,
		Keys: []string{"**.commands", "**.commands_pre", "**.commands_post", "**.install_command"}, RunBy: "tox: each environment's commands"},
	// --- go --------------------------------------------------------------------
	{Name: "go-generate", Ecosystem: "go", Patterns: []string{"*.go"}, Format: FormatGo,
		RunBy: "go generate: every //go:generate line of the package's files"},
	// --- jvm, ruby, php, c/c++, .net ------------------------------------------------
	{Name: "gradle", Ecosystem: "jvm", Patterns: []string{"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "init.gradle", "*.gradle", "*.gradle.kts"},
		Format: FormatCode, Lang: "gradle", RunBy: "gradle / ./gradlew: the build script, on every task"},
	{Name: "gradle-wrapper", Ecosystem: "jvm", Patterns: []string{"gradle/wrapper/gradle-wrapper.properties", ".mvn/wrapper/maven-wrapper.properties"},
		Format: FormatINI, Keys: []string{"distributionUrl:dist", "wrapperUrl:dist"}, RunBy: "./gradlew, ./mvnw: download and run the named distribution"},
	{Name: "maven", Ecosystem: "jvm", Patterns: []string{"pom.xml", ".mvn/extensions.xml", ".mvn/jvm.config", ".mvn/maven.config"}, Format: FormatCode, Lang: "maven",
		RunBy: "mvn: plugins that run programs (exec, antrun), build extensions"},
	{Name: "ruby", Ecosystem: "ruby", Patterns: []string{"Gemfile", "*.gemspec", "Rakefile", "*.rake", "Guardfile", ".pryrc", ".irbrc"},
		Format: FormatCode, Lang: "ruby", RunBy: "bundle install/exec (Gemfile and gemspecs are Ruby), rake, guard"},
	{Name: "composer", Ecosystem: "php", Patterns: []string{"composer.json"}, Format: FormatJSON,
		Keys: []string{"scripts.*:composer"}, RunBy: "composer install/update (event scripts), composer run"},
	{Name: "cmake", Ecosystem: "c", Patterns: []string{"CMakeLists.txt", "*.cmake", "meson.build", "meson.options"}, Format: FormatCode, Lang: "cmake",
		RunBy: "cmake / meson setup: configure-time commands and downloads"},
	{Name: "msbuild", Ecosystem: "dotnet", Patterns: []string{"*.csproj", "*.fsproj", "*.vbproj", "Directory.Build.props", "Directory.Build.targets", "*.targets"},
		Format: FormatCode, Lang: "msbuild", RunBy: "dotnet build / msbuild: Exec tasks and inline tasks"},
	// --- git -------------------------------------------------------------------
	{Name: "git-hook", Ecosystem: "git", Patterns: []string{".git/hooks/*", ".husky/*", ".githooks/*", ".lefthook/*/*", ".config/husky/*"},
		Exclude: []string{"*.sample", ".husky/_/*", ".husky/.gitignore"}, Format: FormatShell,
		RunBy: "git commit / push / checkout / merge: the hook of that name (directly or through husky or core.hooksPath)"},
	{Name: "git-config", Ecosystem: "git", Patterns: []string{".git/config", ".git/config.worktree"}, Format: FormatINI,
		Keys: []string{"core.hookspath:flag", "core.fsmonitor", "core.sshcommand", "core.editor", "core.pager", "core.askpass", "alias.*:bang",
			"filter.*.clean", "filter.*.smudge", "filter.*.process", "diff.*.textconv", "diff.*.command", "merge.*.driver", "credential.helper:bang",
			"sequence.editor", "gpg.program", "gpg.*.program", "uploadpack.packobjectshook", "include.path:flag", "includeif.*.path:flag", "pager.*"},
		RunBy: "git: hooks path, fsmonitor, filters, diff and merge drivers, editors and pagers, ! aliases"},
	{Name: "git-submodules", Ecosystem: "git", Patterns: []string{".gitmodules"}, Format: FormatINI,
		Keys: []string{"submodule.*.update:bang", "submodule.*.url:url"}, RunBy: "git submodule update: !command update strategies, ext:: URLs"},
	{Name: "lefthook", Ecosystem: "git", Patterns: []string{"lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml", "lefthook-local.yml", ".lefthook-local.yml"}, Format: FormatYAML,
		Keys:  []string{"*.commands.*.run", "*.jobs.*.run", "*.jobs.*.group.jobs.*.run", "*.scripts.*.runner", "remotes.*.git_url:uses", "remote.git_url:uses"},
		RunBy: "lefthook, from the git hooks it installs"},
	{Name: "pre-commit", Ecosystem: "git", Patterns: []string{".pre-commit-config.yaml", ".pre-commit-config.yml", ".pre-commit-hooks.yaml"}, Format: FormatYAML,
		Keys:  []string{"repos.*.repo:uses", "repos.*.hooks.*.entry:entry", "*.entry:entry"},
		RunBy: "pre-commit, from the git hook it installs: local hooks' entries, hook repositories' code"},
	// --- ci --------------------------------------------------------------------
	{Name: "github-workflow", Ecosystem: "ci", Patterns: []string{".github/workflows/*.yml", ".github/workflows/*.yaml", "action.yml", "action.yaml"}, Format: FormatYAML,
		Keys: []string{"jobs.*.steps.*.run", "jobs.*.steps.*.uses:uses", "jobs.*.uses:uses", "jobs.*.steps.*.shell:shell", "jobs.*.defaults.run.shell:shell",
			"defaults.run.shell:shell", "runs.steps.*.run", "runs.steps.*.uses:uses", "runs.steps.*.shell:shell", "runs.main:code", "runs.pre:code",
			"runs.post:code", "runs.image:uses", "jobs.*.container.image:uses", "jobs.*.services.*.image:uses"},
		RunBy: "GitHub Actions, with the repository's secrets, on push or pull request"},
	{Name: "gitlab-ci", Ecosystem: "ci", Patterns: []string{".gitlab-ci.yml", ".gitlab-ci.yaml", "*.gitlab-ci.yml"}, Format: FormatYAML,
		Keys: []string{"script", "before_script", "after_script", "*.script", "*.before_script", "*.after_script", "*.hooks.pre_get_sources_script",
			"include:uses", "include.*:uses", "include.*.remote:uses", "include.*.project:uses", "*.image:uses", "*.image.name:uses"},
		RunBy: "GitLab CI, with the project's CI/CD variables"},
	{Name: "ci-other", Ecosystem: "ci", Patterns: []string{".circleci/config.yml", ".circleci/config.yaml", "azure-pipelines.yml", "azure-pipelines.yaml",
		"bitbucket-pipelines.yml", ".travis.yml", ".drone.yml", ".buildkite/pipeline.yml", ".buildkite/pipeline.yaml", ".woodpecker.yml", ".woodpecker/*.yml"},
		Format: FormatYAML,
		Keys: []string{"**.run", "**.run.command", "**.script", "**.bash", "**.powershell:code", "**.pwsh:code", "**.commands", "**.command",
			"**.install", "**.before_install", "**.before_script", "**.after_success", "**.after_failure", "**.after_script", "**.after-script",
			"**.before_deploy", "orbs.*:uses", "**.uses:uses"},
		RunBy: "CircleCI, Azure Pipelines, Bitbucket Pipelines, Travis, Drone, Buildkite, Woodpecker, with their secrets"},
	// --- editors and containers -----------------------------------------------------
	{Name: "devcontainer", Ecosystem: "devcontainer", Patterns: []string{".devcontainer/devcontainer.json", ".devcontainer.json", ".devcontainer/*/devcontainer.json"}, Format: FormatJSON,
		Keys: []string{"initializeCommand:argv", "onCreateCommand:argv", "updateContentCommand:argv", "postCreateCommand:argv", "postStartCommand:argv",
			"postAttachCommand:argv", "initializeCommand.*:argv", "onCreateCommand.*:argv", "updateContentCommand.*:argv", "postCreateCommand.*:argv",
			"postStartCommand.*:argv", "postAttachCommand.*:argv",
			"features:ukeys", "image:uses"},
		RunBy: "Dev Containers, Codespaces: initializeCommand on the host, the others in the container, on create, start and attach"},
	{Name: "vscode-tasks", Ecosystem: "devcontainer", Patterns: []string{".vscode/tasks.json"}, Format: FormatJSON,
		Keys:  []string{"tasks.*.command:cmdargs", "tasks.*.linux.command:cmdargs", "tasks.*.osx.command:cmdargs", "tasks.*.windows.command:cmdargs"},
		RunBy: "VS Code and its forks: tasks, also on folder open (runOn: folderOpen)"},
	{Name: "direnv", Ecosystem: "devcontainer", Patterns: []string{".envrc"}, Format: FormatShell, RunBy: "direnv: sourced by the shell on entering the directory"},
	// --- agents ------------------------------------------------------------------
	{Name: "agent-instructions", Ecosystem: "agent", Format: FormatMarkdown,
		Patterns: []string{"AGENTS.md", "AGENT.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules", ".windsurfrules", ".clinerules", ".clinerules/*",
			".cursor/rules/*", ".github/copilot-instructions.md", ".github/instructions/*.md", ".claude/commands/*.md", ".claude/agents/*.md",
			".claude/skills/*/SKILL.md", "CONVENTIONS.md", ".junie/guidelines.md", ".roo/rules/*", ".kiro/steering/*.md"},
		RunBy: "the coding agent: read into its context at the start of every session, as instructions"},
	{Name: "agent-config", Ecosystem: "agent", Format: FormatJSON,
		Patterns: []string{".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json", ".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json",
			".cursor/hooks.json", ".codex/hooks.json"},
		Keys: []string{"hooks.**.command", "statusLine.command", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper",
			"mcpServers.*.command:cmdargs", "servers.*.command:cmdargs", "toolDiscoveryCommand", "toolCallCommand", "env:env"},
		RunBy: "the coding agent: hooks around every tool call, MCP servers started with the session, credential helpers"},
	{Name: "agent-config-toml", Ecosystem: "agent", Format: FormatTOML, Patterns: []string{".codex/config.toml", ".gemini/commands/*.toml"},
		Keys:  []string{"mcp_servers.*.command:cmdargs", "notify:argv", "prompt:prompt"},
		RunBy: "Codex: MCP servers started with the session, the notify program; Gemini CLI: !{...} commands of a custom command's prompt"},
}

// match reports whether the slash path p matches pattern pat (see
// Family.Patterns); both are lower case.
func match(pat, p string) bool {
	if !strings.Contains(pat, "/") {
		ok, _ := path.Match(pat, path.Base(p))
		return ok
	}
	n := strings.Count(pat, "/") + 1
	i := len(p)
	for k := 0; k < n; k++ {
		i = strings.LastIndexByte(p[:max(i, 0)], '/')
		if i < 0 {
			if k == n-1 {
				break
			}
			return false
		}
	}
	ok, _ := path.Match(pat, p[i+1:])
	return ok
}

// index finds the families a path may belong to without trying every
// pattern: exact base names and extensions by map, the rest in order.
type index struct {
	exact  map[string][]int     // lower-case base name
	ext    map[string][]int     // ".mk", ".gradle.kts"
	stem   map[string][]int     // "jest.config" of jest.config.*
	dir    map[string][]indexed // patterns with a directory, by their file's literal parent directory
	others []indexed            // the rest
}

type indexed struct {
	fam int
	pat string
}

// tableIndex is built on first use: a process that looks up no file (the
// hook on an ignored event, a Bash call) does not pay for it.
var tableIndex = sync.OnceValue(func() index {
	ix := index{exact: map[string][]int{}, ext: map[string][]int{}, stem: map[string][]int{}, dir: map[string][]indexed{}}
	for i, f := range Table {
		for _, pat := range f.Patterns {
			pat = strings.ToLower(pat)
			switch {
			case !strings.ContainsAny(pat, "/*?["):
				ix.exact[pat] = append(ix.exact[pat], i)
			case !strings.Contains(pat, "/") && strings.HasPrefix(pat, "*.") && !strings.ContainsAny(pat[1:], "*?["):
				ix.ext[pat[1:]] = append(ix.ext[pat[1:]], i)
			case !strings.Contains(pat, "/") && strings.HasSuffix(pat, ".*") && !strings.ContainsAny(pat[:len(pat)-2], "*?["):
				ix.stem[pat[:len(pat)-2]] = append(ix.stem[pat[:len(pat)-2]], i)
			case strings.Contains(pat, "/") && !strings.ContainsAny(path.Base(path.Dir(pat)), "*?["):
				parent := path.Base(path.Dir(pat))
				ix.dir[parent] = append(ix.dir[parent], indexed{i, pat})
			default:
				ix.others = append(ix.others, indexed{i, pat})
			}
		}
	}
	return ix
})

// Lookup returns the family of the file at p (a path as a tool call writes
// it, relative or absolute, with / or \), or false when no toolchain runs
// or loads such a file.
func Lookup(p string) (Family, bool) {
	p = strings.ToLower(clean(p))
	if p == "" || p == "." || p == "/" {
		return Family{}, false
	}
	base := path.Base(p)
	best := -1
	try := func(fam int) {
		if best >= 0 && fam >= best {
			return
		}
		if matchAny(Table[fam].Exclude, p) {
			return
		}
		best = fam
	}
	for _, fam := range tableIndex().exact[base] {
		try(fam)
	}
	for i := strings.LastIndexByte(base, '.'); i > 0; i = strings.LastIndexByte(base[:i], '.') {
		// jest.config.ts is a jest.config.* (stem jest.config).
		for _, fam := range tableIndex().stem[base[:i]] {
			try(fam)
		}
	}
	for i := strings.IndexByte(base, '.'); i >= 0; {
		for _, fam := range tableIndex().ext[base[i:]] {
			try(fam)
		}
		j := strings.IndexByte(base[i+1:], '.')
		if j < 0 {
			break
		}
		i += j + 1
	}
	for _, o := range tableIndex().dir[path.Base(path.Dir(p))] {
		if (best < 0 || o.fam < best) && match(o.pat, p) {
			try(o.fam)
		}
	}
	for _, o := range tableIndex().others {
		if (best < 0 || o.fam < best) && match(o.pat, p) {
			try(o.fam)
		}
	}
	if best < 0 {
		return Family{}, false
	}
	return Table[best], true
}

// Runs reports whether a toolchain runs or loads the file at p.
func Runs(p string) bool {
	_, ok := Lookup(p)
	return ok
}

func matchAny(pats []string, p string) bool {
	for _, pat := range pats {
		if match(strings.ToLower(pat), p) {
			return true
		}
	}
	return false
}

// clean normalises a written path: backslashes to slashes, no trailing
// slash, no trailing dots or blanks (which Windows strips), no NTFS stream
// suffix (Makefile::$DATA is Makefile).
func clean(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if i := strings.Index(p, "::"); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimRight(p, "/. \t")
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// Runners are, per ecosystem of Table, the commands that run or load its
// files: a program ("make") or a program and its subcommand ("go
// generate", "python -m pytest"). A session that wrote a file whose content
// could not be proven safe asks before one of them runs (the policy
// workspace-executables), and only before one of them: an unproven
// conftest.py does not ask cargo test.
var Runners = map[string][]string{
	"make": {"make", "gmake", "just", "task", "mise"},
	"node": {"npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx", "deno", "nx", "node", "corepack",
		"eslint", "jest", "vitest", "vite", "webpack", "rollup", "babel", "prettier", "next", "nuxt", "astro", "svelte-kit",
		"postcss", "tailwindcss", "playwright", "cypress", "karma", "mocha", "gulp", "grunt", "tsup", "esbuild",
		"stylelint", "commitlint", "lint-staged", "tsx", "ts-node"},
	"rust": {"cargo", "rustup", "rustc", "cross"},
	"python": {"pytest", "py.test", "tox", "nox", "pip", "pip3", "uv", "uvx", "poetry", "pdm", "hatch", "pipx",
		"python -m pytest", "python3 -m pytest", "python -m pip", "python3 -m pip", "python -m build", "python3 -m build",
		"python -m tox", "python3 -m tox", "python setup.py", "python3 setup.py"},
	"go":           {"go generate"},
	"jvm":          {"gradle", "gradlew", "./gradlew", "mvn", "mvnw", "./mvnw"},
	"ruby":         {"bundle", "bundler", "rake", "rails", "gem"},
	"php":          {"composer"},
	"c":            {"cmake", "ctest"},
	"dotnet":       {"dotnet", "msbuild"},
	"git":          {"git", "pre-commit", "lefthook", "husky"},
	"ci":           {"git push", "act", "gitlab-runner", "gh workflow run"},
	"devcontainer": {"devcontainer", "direnv", "code"},
	"agent":        {"claude", "codex", "gemini", "cursor-agent", "opencode", "copilot", "aider"},
}

// AnyRunners run or load files of every ecosystem: task runners and hook
// runners whose recipes and hooks may call any toolchain (a Makefile's
// test target runs pytest; a pre-commit hook runs lint-staged).
var AnyRunners = []string{"make", "gmake", "just", "task", "mise", "act", "pre-commit", "lefthook", "husky", "tox", "nox",
	"devcontainer", "git commit", "git merge", "git rebase", "git checkout", "git switch", "git pull", "git am",
	"git push", "git cherry-pick", "git revert"}

// RunnersOf returns the commands that run or load the file at p (Runners
// of its family's ecosystem, then AnyRunners), or nil when no toolchain
// runs or loads it.
func RunnersOf(p string) []string {
	f, ok := Lookup(p)
	if !ok {
		return nil
	}
	out := append([]string(nil), Runners[f.Ecosystem]...)
	for _, r := range AnyRunners {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
