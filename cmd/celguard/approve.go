package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/store/statedir"
	"github.com/celguard/celguard/trust"
)

// approveParams is what `celguard approve` and `celguard approvals` were
// asked to do.
type approveParams struct {
	id              string
	session, always bool
	// deny, note: `celguard approve ID --deny [--note TEXT]` (runDeny).
	deny     bool
	note     string
	stateDir string
	userDir  string
	format   string
	// server, sessionID, tokenFile: approve a request celguard serve
	// recorded, through its approval routes (approveServer).
	server, sessionID, tokenFile string
	stdio
}

// addStateFlags declares --state-dir and --user-dir.
func (p *approveParams) addStateFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.stateDir, "state-dir", "", "the hooks' state directory (default: $XDG_STATE_HOME/celguard or ~/.local/state/celguard)")
	cmd.Flags().StringVar(&p.userDir, "user-dir", "", "the user's policy directory, where --always writes (default: $XDG_CONFIG_HOME/celguard or ~/.config/celguard)")
}

// requestID is the form of a request id: 8 lowercase hex digits.
var requestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{8}$`) })

// approvalsTimeout bounds the wait for the sessions' locks (a hook holds
// one while it decides).
const approvalsTimeout = 30 * time.Second

// begin checks p.id (when wanted) and returns the context to work in.
func (p *approveParams) begin(ctx context.Context, wantID bool) (context.Context, context.CancelFunc, error) {
	if wantID && !requestID().MatchString(p.id) {
		return nil, nil, fmt.Errorf("%q is not a request id (8 hex digits, as the refusal names it)", p.id)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, approvalsTimeout)
	return ctx, cancel, nil
}

// store is the hooks' state store p names.
func (p *approveParams) store() (*statedir.Dir, error) {
	dir := p.stateDir
	if dir == "" {
		var err error
		if dir, err = statedir.DefaultStateDir(); err != nil {
			return nil, err
		}
	}
	return &statedir.Dir{Dir: dir}, nil
}

// policyDir is the user's policy directory.
func (p *approveParams) policyDir() (string, error) {
	switch p.userDir {
	case "-":
		return "", errors.New("--always writes into the user's policy directory, and --user-dir - names none")
	case "":
		return trust.ConfigDir()
	}
	return filepath.Abs(p.userDir)
}

func newApproveCmd(sio stdio) *cobra.Command {
	var p approveParams
	cmd := &cobra.Command{
		Use:   "approve ID [--session | --always | --deny [--note TEXT]]",
		Short: "Approve (or deny) a call celguard refused on a host that cannot ask (Codex, Gemini CLI)",
		Long: `Approve answers an approval request. On Codex and Gemini CLI, whose hooks cannot
ask you, celguard refuses a call that needs your approval and names a request
id in the refusal; the agent tells you the id. Approve shows you the call the
request is for and asks you to confirm; then the agent runs the identical call
again and it runs. A different call is asked again.

  celguard approve ID            this exact call, once
  celguard approve ID --session  every call of that tool the same rule asks
                                 about, for the rest of the agent's session
  celguard approve ID --always   this exact call, now and in every later
                                 session: also writes an ordinary allow rule
                                 and its test into your policies
                                 (~/.config/celguard/approved/approved-ID.yaml)
  celguard approve ID --deny [--note TEXT]
                                 refuse this exact call for the rest of the
                                 agent's session: the agent reads your note
                                 with every refusal, and the call asks no more

With --server URL --session-id ID --approver-token-file FILE it answers a
request celguard serve recorded (its hook endpoints' refusal names this form):
the call is read from the server, shown and confirmed the same way, and the
approval is posted to the server's approval routes with the approver token.
Over HTTP an approval is once or --session; --always is refused by the server.

--deny grants nothing, so it asks no question and runs anywhere (as
'celguard approvals revoke' does); with --server it goes to the server's
denial route and the server's decision log records it with your user name.
A request answered already, or unknown, is refused as approve refuses it.

No approval lifts a mandatory rule (the built-in dangerous-commands and
self-protection policies, the admin's policies): their asks make no request.

Approve refuses to run inside an agent's tool call: when an environment
variable that an agent host sets for the commands it runs is set (as celguard
trust does), when stdin is not a terminal, and when one of the processes it
runs under is an agent host (claude, codex, gemini, cursor-agent; on Linux).
No flag skips the question. These are defense in depth: the built-in
self-protection policy asks before a shell command runs celguard approve (on
Codex and Gemini CLI that is a refusal) and blocks writes to the state
directory, whose files carry an HMAC an agent cannot forge without the key.

Requests expire after 24 hours. 'celguard approvals list' shows the pending
requests and the approvals given; 'celguard approvals revoke ID' takes one back.

Exit codes: 0 approved or denied; 1 you answered no; 2 refused, or no such request.`,
		Example: `  # The agent said: run celguard approve 7f3c2a1b
  celguard approve 7f3c2a1b

  # Approve that rule for that tool for the rest of the session
  celguard approve 7f3c2a1b --session

  # Refuse it for the rest of the session, telling the agent why
  celguard approve 7f3c2a1b --deny --note "not on main: open a pull request"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			p.id = args[0]
			return status(runApprove(cmd.Context(), p))
		},
	}
	cmd.Flags().BoolVar(&p.session, "session", false, "approve every call of the tool the rule asks about, for the rest of the session")
	cmd.Flags().BoolVar(&p.always, "always", false, "approve this exact call for good: write an allow rule and its test into your policies")
	cmd.Flags().BoolVar(&p.deny, "deny", false, "deny the request: its exact call is refused for the rest of the session, and asks no more")
	cmd.Flags().StringVar(&p.note, "note", "", "with --deny: what the agent reads with every refusal of the call")
	cmd.MarkFlagsMutuallyExclusive("session", "always", "deny")
	cmd.Flags().StringVar(&p.server, "server", "", "approve a request celguard serve recorded, on this server (http://HOST:PORT, https://..., unix:/path.sock), with --session-id and --approver-token-file")
	cmd.Flags().StringVar(&p.sessionID, "session-id", "", "with --server: the session the refusal names")
	cmd.Flags().StringVar(&p.tokenFile, "approver-token-file", "", "with --server: a file holding the server's approver token")
	p.addStateFlags(cmd)
	return cmd
}

// refuseInsideAgent says why a command that grants something must not run
// here, or "" when it may: an agent host's environment variable, a stdin
// that is not a terminal, an agent host among the process's ancestors.
func refuseInsideAgent(what string, stdin io.Reader) string {
	if name, host, ok := insideAgent(); ok {
		return fmt.Sprintf("refusing to run inside an agent's tool call (%s is set, as %s sets it): %s from your own terminal, outside the agent", name, host, what)
	}
	if !stdinIsTerminal(stdin) {
		return fmt.Sprintf("stdin is not a terminal: %s in your own terminal, where celguard shows what it grants and asks you to confirm (no flag skips the question)", what)
	}
	if prog, pid, ok := agentAncestor(); ok {
		return fmt.Sprintf("refusing to run under an agent host (%s, process %d, is one of the processes celguard runs under): %s from a terminal the agent did not start", prog, pid, what)
	}
	return ""
}

func runApprove(ctx context.Context, p approveParams) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(p.stderr, "celguard approve: "+format+"\n", args...)
		return exitUsage
	}
	if p.note != "" && !p.deny {
		return fail("--note goes with --deny (an approval has no note)")
	}
	if p.deny {
		return runDeny(ctx, p, fail)
	}
	if why := refuseInsideAgent("approve a request", p.stdin); why != "" {
		return fail("%s", why)
	}
	ctx, cancel, err := p.begin(ctx, true)
	if err != nil {
		return fail("%v", err)
	}
	defer cancel()
	if p.server != "" {
		return approveServer(ctx, p, fail)
	}
	return approveLocal(ctx, p, fail)
}

// runDeny is `celguard approve ID --deny [--note TEXT]`: it answers the
// request with a denial (eval.Session.Deny), in the hooks' state directory
// or with --server on that celguard serve. A denial grants nothing, so it
// needs no terminal and asks no question: the refusals of runApprove guard
// what an agent could grant itself, and a denial only refuses.
func runDeny(ctx context.Context, p approveParams, fail func(string, ...any) int) int {
	ctx, cancel, err := p.begin(ctx, true)
	if err != nil {
		return fail("%v", err)
	}
	defer cancel()
	if p.server != "" {
		return denyServer(ctx, p, fail)
	}
	store, err := p.store()
	if err != nil {
		return fail("%v", err)
	}
	req, warnings, err := hooks.FindRequest(ctx, store, p.id)
	for _, w := range warnings {
		fmt.Fprintf(p.stderr, "celguard approve: warning: %s\n", w)
	}
	if err != nil {
		return fail("%v", err)
	}
	dn, err := hooks.Deny(ctx, store, req, "celguard approve --deny"+byUser(), p.note)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(p.stdout, "Denied %s: %s is refused for the rest of session %s%s.\n", dn.ID, decisionlog.MaskRequest(req.PendingRequest, nil).Summary, req.Session, noteSaid(dn.Note))
	return exitOK
}

// byUser is " (NAME)" for the user running celguard, or "".
func byUser() string {
	if name := userName(); name != "" {
		return " (" + name + ")"
	}
	return ""
}

// userName is the name of the user running celguard, or "" when it has
// none fit for a record (empty, over 64 characters, not printable).
func userName() string {
	u, err := user.Current()
	if err != nil || u.Username == "" || len(u.Username) > 64 ||
		strings.ContainsFunc(u.Username, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return ""
	}
	return u.Username
}

// noteSaid is how a denial's confirmation mentions its note.
func noteSaid(note string) string {
	if note == "" {
		return " (no note: the agent is told only that you denied it)"
	}
	return ", and the agent reads your note: " + note
}

// approveLocal answers a request recorded in the hooks' state directory,
// after showing the call and asking; --always also writes the allow rule
// and its test into the user's policies.
func approveLocal(ctx context.Context, p approveParams, fail func(string, ...any) int) int {
	store, err := p.store()
	if err != nil {
		return fail("%v", err)
	}
	req, warnings, err := hooks.FindRequest(ctx, store, p.id)
	for _, w := range warnings {
		fmt.Fprintf(p.stderr, "celguard approve: warning: %s\n", w)
	}
	if err != nil {
		return fail("%v", err)
	}
	scope, what := eval.GrantOnce, "this exact call, once"
	var dir string
	switch {
	case p.session:
		scope, what = eval.GrantSession, fmt.Sprintf("every %s call rule %s asks about, for the rest of session %s", req.Tool, req.Rule, req.Session)
	case p.always:
		if req.Read {
			return fail("request %s is for a read of an MCP resource or prompt, which no allow rule of a tool call covers: approve it once or --session", req.ID)
		}
		if req.ArgsOmitted {
			return fail("the call's arguments are larger than %d bytes and were not kept, so no rule can be written for it: approve it once or --session", eval.MaxRequestArgs)
		}
		if dir, err = p.policyDir(); err != nil {
			return fail("%v", err)
		}
		scope, what = eval.GrantAlways, "this exact call, for good: an allow rule and its test are written to "+
			filepath.Join(dir, hooks.AlwaysDir, "approved-"+req.ID+".yaml")
	}
	ok, err := p.confirm(decisionlog.MaskRequest(req.PendingRequest, nil), fmt.Sprintf("session %s, %s", req.Session, req.Created.Local().Format(time.DateTime)), what)
	if err != nil {
		return fail("%v", err)
	}
	if !ok {
		return exitFindings
	}
	if scope == eval.GrantAlways {
		path, err := hooks.WriteAlwaysRule(dir, req.PendingRequest, "celguard approve "+req.ID+" --always", time.Now())
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(p.stdout, "\nWrote %s and its test; celguard lint --effective and celguard test %s check them.\n", path, filepath.Dir(path))
	}
	if _, err := hooks.Approve(ctx, store, req, scope, "celguard approve"); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(p.stdout, "\nApproved %s: %s. Tell the agent to run the call again.\n", req.ID, what)
	return exitOK
}

// confirm shows the call a request is for and asks the person whether to
// approve it (what says how far): read the call, not the agent's summary.
func (p approveParams) confirm(req eval.PendingRequest, where, what string) (bool, error) {
	fmt.Fprintf(p.stdout, "Request:  %s (%s)\n", req.ID, where)
	fmt.Fprintf(p.stdout, "Rule:     %s (policy %s): %s\n", req.Rule, req.Policy, req.Reason)
	fmt.Fprintf(p.stdout, "Call:     %s\n", req.Summary)
	if req.Cwd != "" {
		fmt.Fprintf(p.stdout, "In:       %s\n", req.Cwd)
	}
	if args, err := json.Marshal(req.Args); err == nil && len(args) <= 2000 {
		fmt.Fprintf(p.stdout, "Args:     %s\n", args)
	}
	fmt.Fprintf(p.stdout, "Approve:  %s\n\nThe agent asked you for this approval: read the call, not the agent's summary of it.\nApprove? [y/N] ", what)
	answer, err := bufio.NewReader(p.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		fmt.Fprintln(p.stdout, "\nNot approved.")
		return false, nil
	}
	return true, nil
}

func newApprovalsCmd(sio stdio) *cobra.Command {
	var p approveParams
	cmd := &cobra.Command{
		Use:   "approvals list | approvals revoke ID",
		Short: "List pending approval requests and given approvals, or revoke one",
		Long: `Approvals shows and manages what celguard approve recorded in the hooks' state
directory: 'list' prints the pending requests and the approvals given, per
session; 'revoke ID' forgets the approval or request ID in every session, and
removes the rule --always wrote for it. Neither grants anything, so both run
anywhere. With --server URL --approver-token-file FILE, 'list' lists what a
celguard serve recorded instead: the pending requests of every session it
holds, with their session ids, to answer with 'celguard approve ID --server
URL --session-id SESSION'.`,
		Example: `  celguard approvals list
  celguard approvals list --format json
  celguard approvals list --server http://127.0.0.1:9743 --approver-token-file /etc/celguard/operator-token
  celguard approvals revoke 7f3c2a1b`,
		Args: cobra.NoArgs,
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List pending approval requests and given approvals",
		Example: "  celguard approvals list --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			return status(runApprovalsList(cmd.Context(), p))
		},
	}
	list.Flags().StringVar(&p.format, "format", "text", "text or json")
	list.Flags().StringVar(&p.server, "server", "", "list the pending requests of every session this celguard serve holds (http://HOST:PORT, https://..., unix:/path.sock), with --approver-token-file")
	list.Flags().StringVar(&p.tokenFile, "approver-token-file", "", "with --server: a file holding the server's operator token")
	p.addStateFlags(list)
	revoke := &cobra.Command{
		Use:     "revoke ID",
		Short:   "Take back an approval, or drop a pending request",
		Example: "  celguard approvals revoke 7f3c2a1b",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			p.id = args[0]
			return status(runApprovalsRevoke(cmd.Context(), p))
		},
	}
	p.addStateFlags(revoke)
	cmd.AddCommand(list, revoke)
	return cmd
}

func runApprovalsList(ctx context.Context, p approveParams) int {
	ctx, cancel, _ := p.begin(ctx, false)
	defer cancel()
	if p.format != "text" && p.format != "json" {
		fmt.Fprintf(p.stderr, "celguard approvals: unknown --format %q: use text or json\n", p.format)
		return exitUsage
	}
	reqs, grants, err := p.approvals(ctx)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard approvals: %v\n", err)
		return exitUsage
	}
	// Shown masked, as the decision log shows a call.
	for i := range reqs {
		reqs[i].PendingRequest = decisionlog.MaskRequest(reqs[i].PendingRequest, nil)
	}
	for i := range grants {
		grants[i].Grant = decisionlog.MaskGrant(grants[i].Grant)
	}
	if p.format == "json" {
		return printApprovalsJSON(p.stdout, reqs, grants)
	}
	return printApprovalsText(p.stdout, reqs, grants)
}

// approvals are the pending requests and the grants of every session: in
// the hooks' state directory, or with --server on that celguard serve
// (every session it holds, through its operator route GET /v1/approvals).
func (p approveParams) approvals(ctx context.Context) ([]hooks.SessionRequest, []hooks.SessionGrant, error) {
	if p.server != "" {
		if p.tokenFile == "" {
			return nil, nil, errors.New("--server needs --approver-token-file (the server's operator token)")
		}
		c, err := operatorClient(p.server, p.tokenFile)
		if err != nil {
			return nil, nil, err
		}
		sessions, err := c.AllApprovals(ctx)
		var reqs []hooks.SessionRequest
		var grants []hooks.SessionGrant
		for _, s := range sessions {
			for _, r := range s.Requests {
				reqs = append(reqs, hooks.SessionRequest{Session: s.SessionID, PendingRequest: r})
			}
			for _, g := range s.Grants {
				grants = append(grants, hooks.SessionGrant{Session: s.SessionID, Grant: g})
			}
		}
		return reqs, grants, err
	}
	store, err := p.store()
	if err != nil {
		return nil, nil, err
	}
	reqs, grants, warnings, err := hooks.Approvals(ctx, store)
	for _, w := range warnings {
		fmt.Fprintf(p.stderr, "celguard approvals: warning: %s\n", w)
	}
	return reqs, grants, err
}

// printApprovalsJSON prints the requests and grants as one JSON object.
func printApprovalsJSON(w io.Writer, reqs []hooks.SessionRequest, grants []hooks.SessionGrant) int {
	out := struct {
		Requests []hooks.SessionRequest `json:"requests"`
		Grants   []hooks.SessionGrant   `json:"approvals"`
	}{append([]hooks.SessionRequest{}, reqs...), append([]hooks.SessionGrant{}, grants...)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	return exitOK
}

// printApprovalsText prints the requests and grants as two tables.
func printApprovalsText(w io.Writer, reqs []hooks.SessionRequest, grants []hooks.SessionGrant) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Pending requests: %d\n", len(reqs))
	if len(reqs) > 0 {
		fmt.Fprintln(tw, "ID\tSESSION\tRULE\tCALL")
		for _, r := range reqs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Session, r.Rule, r.Summary)
		}
	}
	fmt.Fprintf(tw, "Approvals: %d\n", len(grants))
	if len(grants) > 0 {
		fmt.Fprintln(tw, "ID\tSESSION\tSCOPE\tRULE\tWHAT\tBY")
		for _, g := range grants {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Session, g.Scope, g.Rule, g.Summary, g.By)
		}
	}
	_ = tw.Flush()
	return exitOK
}

func runApprovalsRevoke(ctx context.Context, p approveParams) int {
	ctx, cancel, err := p.begin(ctx, true)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard approvals: %v\n", err)
		return exitUsage
	}
	defer cancel()
	store, err := p.store()
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard approvals: %v\n", err)
		return exitUsage
	}
	n, warnings, err := hooks.Revoke(ctx, store, p.id)
	for _, w := range warnings {
		fmt.Fprintf(p.stderr, "celguard approvals: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard approvals: %v\n", err)
		return exitUsage
	}
	removed := 0
	if dir, err := p.policyDir(); err == nil {
		for _, suffix := range []string{".yaml", "_test.yaml"} {
			if os.Remove(filepath.Join(dir, hooks.AlwaysDir, "approved-"+p.id+suffix)) == nil {
				removed++
			}
		}
	}
	switch {
	case n == 0 && removed == 0:
		fmt.Fprintf(p.stdout, "No approval or request %s.\n", p.id)
	default:
		fmt.Fprintf(p.stdout, "Revoked %s (%d session(s), %d rule file(s) removed).\n", p.id, n, removed)
	}
	return exitOK
}
