package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/stdlib/shell"
	"github.com/celguard/celguard/trust"
)

// trustParams is what `celguard trust` was asked to do.
type trustParams struct {
	dir          string // the project: a directory in it; "" is the current directory
	list, revoke bool
	format       string // --list: text or json
	stdio
}

func newTrustCmd(sio stdio) *cobra.Command {
	var p trustParams
	cmd := &cobra.Command{
		Use:   "trust [DIR] | trust --list | trust --revoke [DIR]",
		Short: "Trust a project's .celguard/ policies, list trusted projects, or revoke one",
		Long: `Trust records, in your trust store ($XDG_CONFIG_HOME/celguard/trust.json, or
~/.config/celguard/trust.json), that you trust the .celguard/ policies of the
project holding DIR (the current directory by default): the project root is
the nearest directory at or above DIR that holds .git, or DIR itself outside a
repository, as eval and hook find it.

Until you trust it, a project's policies can only make a decision stricter:
a cloned repository is written by whoever wrote it (docs/layers.md). Once
trusted, its policies decide with the user's and the built-in ones, above
them: they can allow what a built-in rule would ask, and their Overrides
files apply. No project can lift a mandatory rule.

Trust is bound to content: trust shows the files it reads (every policy,
Overrides and ToolClasses file of .celguard/ that eval reads; test suites,
files starting with _ or . and testdata/ are not read, so not covered) and
their SHA-256 digest, asks you to confirm, and records the digest. Any change
to those files (a git pull, an agent's edit) makes the project untrusted
again until you run trust again.

Trust refuses to run inside an agent's tool call: when an environment
variable that Claude Code, Codex, Gemini CLI or Cursor set for the commands
they run is set, not empty (CLAUDECODE, CLAUDE_CODE_ENTRYPOINT, CODEX_SANDBOX,
CODEX_SANDBOX_NETWORK_DISABLED, CODEX_THREAD_ID, CODEX_CI, GEMINI_CLI,
CURSOR_AGENT, CURSOR_TRACE_ID, AI_AGENT), and when stdin is not a terminal:
you confirm at the terminal, and no flag skips the question. This is defense
in depth: an agent can unset a variable or fake a terminal, so the barrier
is the built-in self-protection policy, which asks before any command runs
celguard trust and blocks writes to the trust store.

--list prints the trusted projects and whether their files are still those
trusted (current), changed, or gone; --format json prints them as JSON.
--revoke forgets the project holding DIR; it only takes trust away, so it
runs anywhere.

Exit codes: 0 on success; 1 when you answer no; 2 when it refuses (inside
an agent, no terminal), finds nothing to trust, or cannot read or write the
trust store.`,
		Example: `  # Trust the project of the current directory (it asks first)
  celguard trust

  # What is trusted, and is it still what you trusted?
  celguard trust --list

  # Forget a project
  celguard trust --revoke ~/src/some-repo`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			if len(args) == 1 {
				p.dir = args[0]
			}
			return status(runTrust(p))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&p.list, "list", false, "list the trusted projects")
	f.BoolVar(&p.revoke, "revoke", false, "forget the project holding DIR (default: the current directory)")
	f.StringVar(&p.format, "format", "text", "--list output: text or json")
	cmd.MarkFlagsMutuallyExclusive("list", "revoke")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// agentMarkers are environment variables that agent hosts set for the
// commands their agent runs (verified against each host's documentation
// and source): their presence means celguard trust is running inside an
// agent's tool call. Variables a user may set in their own shell to
// configure a host (CLAUDE_CODE_USE_BEDROCK, CODEX_HOME, CURSOR_API_KEY)
// are not markers, which is why there are no prefixes here.
var agentMarkers = []struct{ name, host string }{
	{"CLAUDECODE", "Claude Code"},             // =1 in the Bash tool's commands
	{"CLAUDE_CODE_ENTRYPOINT", "Claude Code"}, // set by claude for its children
	{"CODEX_SANDBOX", "Codex"},                // the sandbox a command runs in (seatbelt, ...)
	{"CODEX_SANDBOX_NETWORK_DISABLED", "Codex"},
	{"CODEX_THREAD_ID", "Codex"}, // the conversation the command belongs to
	{"CODEX_CI", "Codex"},
	{"GEMINI_CLI", "Gemini CLI"},  // =1 in run_shell_command's commands
	{"CURSOR_AGENT", "Cursor"},    // Cursor's agent CLI
	{"CURSOR_TRACE_ID", "Cursor"}, // Cursor's terminals, the agent's included
	{"AI_AGENT", "an agent host"}, // the emerging self-identification convention
}

// insideAgent returns the first agent marker set in the environment.
func insideAgent() (name, host string, ok bool) {
	for _, m := range agentMarkers {
		if os.Getenv(m.name) != "" {
			return m.name, m.host, true
		}
	}
	return "", "", false
}

// stdinIsTerminal reports whether r, a command's stdin, is a terminal. The
// test binary replaces it (main_test.go); celguard itself has no way to.
var stdinIsTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f.Fd())
}

func runTrust(p trustParams) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(p.stderr, "celguard trust: "+format+"\n", args...)
		return exitUsage
	}
	switch {
	case p.format != "text" && p.format != "json":
		return fail("unknown --format %q: use text or json", p.format)
	case p.format != "text" && !p.list:
		return fail("--format is for --list")
	case p.list && p.dir != "":
		return fail("--list takes no directory")
	}
	path, err := trust.DefaultPath()
	if err != nil {
		return fail("%v", err)
	}
	store, err := trust.Load(path)
	if err != nil {
		// Never write over a store that cannot be read: it holds the
		// user's other projects.
		return fail("%v\nFix or remove the file, then run celguard trust again.", err)
	}
	switch {
	case p.list:
		return runTrustList(p, store)
	case p.revoke:
		return runTrustRevoke(p, store)
	}
	return runTrustRecord(p, store, fail)
}

// runTrustRecord shows the project's files and digest, asks, and records.
func runTrustRecord(p trustParams, store *trust.Store, fail func(string, ...any) int) int {
	if name, host, ok := insideAgent(); ok {
		return fail("refusing to run inside an agent's tool call (%s is set, as %s sets it): trust a project from your own terminal, outside the agent", name, host)
	}
	if !stdinIsTerminal(p.stdin) {
		return fail("stdin is not a terminal: run celguard trust in your own terminal, where it shows what it trusts and asks you to confirm (no flag skips the question)")
	}
	proj, err := projectToTrust(p.dir, store)
	if err != nil {
		return fail("%v", err)
	}
	showProject(p.stdout, proj)
	if proj.Trusted {
		fmt.Fprintf(p.stdout, "Already trusted, with these files, on %s.\n", proj.Entry.TrustedAt.UTC().Format(time.RFC3339))
		return exitOK
	}
	fmt.Fprintf(p.stdout, "Now:       untrusted: %s\n\n", proj.Reason)
	if ok, err := askTrust(p); err != nil {
		return fail("%v", err)
	} else if !ok {
		return exitFindings
	}
	// Record the digest shown, not one computed now: a file changed while
	// the question was asked is not what the user saw, and leaves the
	// project untrusted.
	store.Set(trust.Entry{Root: proj.Root, Digest: proj.Digest, Files: proj.Files, TrustedAt: time.Now().UTC().Truncate(time.Second)})
	if err := store.Save(); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(p.stdout, "\nTrusted %s (%s), recorded in %s.\n", proj.Root, proj.Digest, store.Path)
	return exitOK
}

// runTrustRevoke forgets the project holding p.dir.
func runTrustRevoke(p trustParams, store *trust.Store) int {
	root, err := policies.ProjectRoot(p.dir)
	if errors.Is(err, fs.ErrNotExist) && p.dir != "" {
		// A project that is gone can still be forgotten, by the path it
		// was trusted under.
		root, err = filepath.Abs(p.dir)
	}
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard trust: %v\n", describe(err))
		return exitUsage
	}
	if !store.Remove(root) {
		fmt.Fprintf(p.stdout, "%s was not trusted.\n", root)
		return exitOK
	}
	if err := store.Save(); err != nil {
		fmt.Fprintf(p.stderr, "celguard trust: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(p.stdout, "Revoked trust in %s.\n", root)
	return exitOK
}

// trustedProject is one row of --list: the entry and whether the project's
// files are still those trusted.
type trustedProject struct {
	trust.Entry
	// Status is current (the files are those trusted), changed, or gone
	// (no policy files any more).
	Status string `json:"status"`
}

// runTrustList prints the trusted projects.
func runTrustList(p trustParams, store *trust.Store) int {
	rows := []trustedProject{}
	for _, e := range store.Entries {
		status := "gone"
		proj, err := policies.ProjectLayer(policies.Options{ProjectDir: filepath.Join(e.Root, ".celguard"), TrustFile: "-"})
		switch {
		case err != nil:
			status = "unreadable"
		case proj != nil && proj.Digest == e.Digest:
			status = "current"
		case proj != nil:
			status = "changed"
		}
		rows = append(rows, trustedProject{Entry: e, Status: status})
	}
	if p.format == "json" {
		enc := json.NewEncoder(p.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintf(p.stderr, "celguard trust: %v\n", err)
			return exitUsage
		}
		return exitOK
	}
	if len(rows) == 0 {
		fmt.Fprintf(p.stdout, "No trusted projects (%s).\n", store.Path)
		return exitOK
	}
	tw := tabwriter.NewWriter(p.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROOT\tSTATUS\tFILES\tTRUSTED\tDIGEST")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Root, r.Status, len(r.Files), r.TrustedAt.UTC().Format(time.RFC3339), r.Digest)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(p.stderr, "celguard trust: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// trustCommand is the command that trusts the project at root, quoted for
// a shell.
func trustCommand(root string) string { return "celguard trust " + shell.Quote(root) }

// projectToTrust is the project layer under work (the current directory
// when empty), as the trust store sees it; no policy files is an error.
func projectToTrust(work string, store *trust.Store) (*policies.Project, error) {
	if work != "" {
		if st, err := os.Stat(work); err != nil {
			return nil, describe(err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", work)
		}
	}
	proj, err := policies.ProjectLayer(policies.Options{WorkDir: work, TrustFile: store.Path})
	if err != nil {
		return nil, describe(err)
	}
	if proj == nil {
		root, err := policies.ProjectRoot(work)
		if err != nil {
			return nil, describe(err)
		}
		return nil, fmt.Errorf("no policy files in %s: nothing to trust", filepath.Join(root, ".celguard"))
	}
	return proj, nil
}

// showProject prints the project, its policy files and their digest.
func showProject(w io.Writer, proj *policies.Project) {
	fmt.Fprintf(w, "Project:   %s\nPolicies:  %s\n", proj.Root, proj.Dir)
	for _, f := range proj.Files {
		fmt.Fprintf(w, "  %s  %s\n", f.SHA256[:12], f.Name)
	}
	fmt.Fprintf(w, "Digest:    %s\n", proj.Digest)
}

// askTrust says what trusting the project does and asks the person.
func askTrust(p trustParams) (bool, error) {
	fmt.Fprint(p.stdout, `Trusted, these files decide above your own policies and the built-in ones:
they can allow what another rule would ask and disable policies that are
not mandatory. Read them first: whoever wrote the repository wrote them. A
change to any of them untrusts the project.
Trust them? [y/N] `)
	answer, err := bufio.NewReader(p.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		fmt.Fprintln(p.stdout, "\nNot trusted.")
		return false, nil
	}
	return true, nil
}
