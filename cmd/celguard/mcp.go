package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/mcpproxy"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/stdlib/shell"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// mcpProxyParams is what `celguard mcp proxy` was asked to do.
type mcpProxyParams struct {
	policies  selection
	decisions decisionOptions
	name      string
	store     string
	stateDir  string
	timeout   time.Duration
	logLevel  string
	pins      string
	command   []string
	upstreams []string // --upstream NAME=URL|NAME=COMMAND ARGS
	config    string   // --config FILE: mcpServers
	listen    string   // --listen ADDR: streamable HTTP instead of stdio
	tokenFile string
	stdio
}

func newMCPCmd(sio stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Guard MCP servers: a policy-enforcing MCP proxy",
		Example: `  # In a client's mcpServers entry: the filesystem server behind the built-in policies
  celguard mcp proxy --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/project`,
	}
	cmd.AddCommand(newMCPProxyCmd(sio), newMCPPinsCmd(sio))
	return cmd
}

func newMCPProxyCmd(sio stdio) *cobra.Command {
	var p mcpProxyParams
	cmd := &cobra.Command{
		Use:   "proxy (--name NAME -- COMMAND [ARGS...] | --upstream NAME=URL|COMMAND... | --config FILE) [flags]",
		Short: "Serve MCP servers with every tool call, tool listing and read decided by the policies",
		Long: `Proxy fronts one or more MCP servers and serves their tools, resources
and prompts over this process's stdin and stdout, for a client's
mcpServers entry, or over streamable HTTP with --listen (a gateway).
The servers: COMMAND after -- (named by --name), each --upstream
NAME=URL (streamable HTTP) or NAME=COMMAND ARGS (stdio), and the
mcpServers of --config FILE (the JSON a client writes). With several,
the client sees their tools and prompts as SERVER__NAME.

Every tools/call is decided by the policies (chosen as eval chooses
them) before it reaches the server and after it returns, with the tool
named mcp__NAME__TOOL as Claude Code and Codex name it, so mcp.server and
mcp.tool read the same through a hook and through the proxy. Rules of
phase tools decide which tools a client is shown (a hidden tool is also
refused: tool_hidden) and may rewrite descriptions; rules of phase
resource decide each resources/read and prompts/get.

A blocked, halted or unapproved call, and a call the server fails to
answer (it died, hung past --timeout or answered garbage: code
upstream_failed), is answered with an error result the model reads; the
proxy keeps serving, and starts the server again on the next call. An ask
is put to the user through MCP elicitation when the client declares it;
otherwise it is refused as approval request ID, and once a person runs
celguard approve ID the identical call made again runs (as on the hosts
whose hooks cannot ask). One client connection is one session (counters,
halts, approvals), kept in the hooks' state directory (--state-dir), or
in --store. --listen beyond loopback needs
--token-file (the bearer token every request must carry). See
docs/mcp.md.`,
		Example: `  celguard mcp proxy --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/project
  celguard mcp proxy --config ~/.config/celguard/mcp.json --listen 127.0.0.1:9744
  celguard mcp proxy --upstream docs=https://mcp.example.com/mcp --upstream fs="mcp-server-filesystem /srv/app"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash == 0 && len(args) > 0 && p.name != "":
				p.command = args
			case len(args) == 0 && p.name == "" && (len(p.upstreams) > 0 || p.config != ""):
			default:
				fmt.Fprintln(p.stderr, "celguard mcp proxy: give the servers: --name NAME -- COMMAND [ARGS...], --upstream NAME=URL|COMMAND, or --config FILE")
				return status(exitUsage)
			}
			return status(runMCPProxy(cmd.Context(), p))
		},
	}
	f := cmd.Flags()
	p.policies.addFlags(f)
	p.decisions.addFlags(f)
	f.StringVar(&p.name, "name", "", "the name of the server whose command follows --: the policies see its tools as mcp__NAME__TOOL")
	f.StringArrayVar(&p.upstreams, "upstream", nil, "a server: NAME=URL (streamable HTTP) or NAME=COMMAND ARGS (stdio, words split at spaces); repeatable")
	f.StringVar(&p.config, "config", "", "a JSON file whose mcpServers (or servers) name the servers, as a client's configuration does: command, args, env, cwd, or url and headers")
	f.StringVar(&p.listen, "listen", "", "serve over MCP's streamable HTTP at ADDR/mcp instead of stdio; beyond loopback it needs --token-file")
	f.StringVar(&p.tokenFile, "token-file", "", "with --listen: a file whose content is the bearer token every request must carry")
	f.StringVar(&p.store, "store", "", "the state store instead of the state directory: memory: (in this process), redis://HOST:PORT/DB, valkey://HOST:PORT/DB or file:///DIR (docs/store.md); celguard approve reaches the requests of a state directory (file:///DIR) alone")
	f.StringVar(&p.stateDir, "state-dir", "", "the state directory the sessions and their approval requests are kept in, as the hooks keep theirs (default: $XDG_STATE_HOME/celguard or ~/.local/state/celguard)")
	f.DurationVar(&p.timeout, "timeout", mcpproxy.DefaultCallTimeout, "the longest the server may take to answer one call; past it the call is refused (upstream_failed)")
	f.StringVar(&p.pins, "pins", "", "a pins file: each tool's definition is pinned there on first use, and a tool whose definition changed since is not offered and refused (tool_changed) until an operator accepts it (celguard mcp pins accept)")
	f.StringVar(&p.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	return cmd
}

func runMCPProxy(ctx context.Context, p mcpProxyParams) int {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, closeStore, err := mcpProxyConfig(ctx, p)
	if err != nil {
		return p.fail(err)
	}
	defer closeStore()
	px, err := mcpproxy.New(ctx, cfg)
	if err != nil {
		return p.fail(err)
	}
	defer px.Close()
	set := px.Guard().Engine().PolicySet()
	printWarnings(p.stderr, "celguard mcp proxy", append(layerWarnings(px.Guard().Discovery(), set), p.decisions.warnings(set)...))
	if p.listen != "" {
		return p.fail(p.serveHTTP(ctx, px))
	}
	if err := px.Run(ctx, p.clientTransport()); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return p.fail(err)
	}
	return exitOK
}

// serveHTTP serves px over streamable HTTP at --listen until ctx ends.
func (p mcpProxyParams) serveHTTP(ctx context.Context, px *mcpproxy.Proxy) error {
	token := ""
	if p.tokenFile != "" {
		var err error
		if token, err = readToken(p.tokenFile); err != nil {
			return err
		}
	} else if !mcpproxy.IsLoopback(p.listen) {
		return fmt.Errorf("--listen %s is beyond loopback: give --token-file, the bearer token every request must carry", p.listen)
	}
	ln, err := net.Listen("tcp", p.listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.stderr, "celguard mcp proxy: serving MCP over streamable HTTP at http://%s%s\n", ln.Addr(), mcpproxy.Path)
	return px.Serve(ctx, ln, token)
}

// mcpProxyConfig turns the flags into the proxy's configuration: the
// engine through the composition root, the state store, and the upstream
// started as a child process. The returned func closes the store.
func mcpProxyConfig(ctx context.Context, p mcpProxyParams) (mcpproxy.Config, func(), error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(p.logLevel)); err != nil {
		return mcpproxy.Config{}, nil, fmt.Errorf("--log-level %q: %v", p.logLevel, err)
	}
	ecfg, err := engineConfig(p.policies, p.decisions)
	if err != nil {
		return mcpproxy.Config{}, nil, err
	}
	st, approveCmd, noApprovals, err := p.openStore(ctx)
	if err != nil {
		return mcpproxy.Config{}, nil, err
	}
	ecfg.Store = st
	// An ask the client cannot put to its user is recorded as a request a
	// person approves with celguard approve, which reads a state directory.
	ecfg.ApprovalRequests = noApprovals == ""
	// The pins file and the servers' configuration are the proxy's own:
	// self-protection blocks a tool call that reads or writes one (an
	// agent that rewrote a pin or a server's command would undo them).
	for _, f := range []string{p.pins, p.config, p.tokenFile} {
		if f == "" {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			st.Close()
			return mcpproxy.Config{}, nil, err
		}
		ecfg.ProtectedFiles = append(ecfg.ProtectedFiles, abs)
	}
	cwd, _ := os.Getwd()
	ups, err := p.upstreamList()
	if err != nil {
		st.Close()
		return mcpproxy.Config{}, nil, err
	}
	return mcpproxy.Config{
		Upstreams:      ups,
		Engine:         ecfg,
		Cwd:            cwd,
		CallTimeout:    p.timeout,
		Pins:           p.pins,
		Version:        currentBuild().String(),
		Logger:         slog.New(slog.NewTextHandler(p.stderr, &slog.HandlerOptions{Level: level})),
		ApproveCommand: func(string) string { return approveCmd },
		NoApprovals:    noApprovals,
	}, func() { st.Close() }, nil
}

// openStore opens the sessions' store: the state directory (--state-dir,
// the hooks' by default), or --store. It returns the command that
// approves a request recorded there, or why none can be approved (a
// store celguard approve cannot read).
func (p mcpProxyParams) openStore(ctx context.Context) (st state.Store, approveCmd, noApprovals string, err error) {
	if p.store != "" && p.stateDir != "" {
		return nil, "", "", errors.New("give --state-dir or --store, not both")
	}
	if p.store == "" {
		dir := p.stateDir
		if dir == "" {
			if dir, err = statedir.DefaultStateDir(); err != nil {
				return nil, "", "", err
			}
		}
		sd := &statedir.Dir{Dir: dir}
		if _, err := sd.Key(); err != nil {
			return nil, "", "", fmt.Errorf("the state directory: %w", err)
		}
		approveCmd = "celguard approve"
		if p.stateDir != "" {
			approveCmd += " --state-dir " + shell.Quote(dir)
		}
		return store.NewFileDir(sd), approveCmd, "", nil
	}
	if st, err = store.Open(ctx, p.store); err != nil {
		return nil, "", "", fmt.Errorf("--store: %w", err)
	}
	if f, ok := st.(*store.File); ok {
		return st, "celguard approve --state-dir " + shell.Quote(f.Dir().Dir), "", nil
	}
	return st, "", "this proxy keeps its sessions in " + store.Redact(p.store) + " (--store), which celguard approve cannot reach: tell the user, who can start the proxy with its state directory (the default) to approve asks there", nil
}

// upstreamList is the servers the flags name: the command after --, each
// --upstream, and --config's, in that order.
func (p mcpProxyParams) upstreamList() ([]mcpproxy.Upstream, error) {
	var ups []mcpproxy.Upstream
	if len(p.command) > 0 {
		s := mcpproxy.ServerSpec{Command: p.command[0], Args: p.command[1:]}
		ups = append(ups, s.Upstream(p.name, p.stderr))
	}
	for _, u := range p.upstreams {
		name, s, err := mcpproxy.ParseUpstream(u)
		if err != nil {
			return nil, fmt.Errorf("--upstream: %w", err)
		}
		ups = append(ups, s.Upstream(name, p.stderr))
	}
	if p.config != "" {
		servers, err := mcpproxy.ReadServers(p.config)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			ups = append(ups, servers[name].Upstream(name, p.stderr))
		}
	}
	return ups, nil
}

// clientTransport is the MCP client's side: the process's standard streams,
// or the streams run's caller gave (a test, an embedding program).
func (p mcpProxyParams) clientTransport() mcp.Transport {
	if p.stdin == io.Reader(os.Stdin) {
		return &mcp.StdioTransport{}
	}
	return &mcp.IOTransport{Reader: io.NopCloser(p.stdin), Writer: nopWriteCloser{p.stdout}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// fail reports err (the policies' diagnostics in full) and returns the
// exit code: exitOK for nil.
func (p mcpProxyParams) fail(err error) int {
	if err == nil {
		return exitOK
	}
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		_ = output.DiagnosticsText(p.stderr, ds, nil)
		err = errors.New("the policies do not compile")
	}
	fmt.Fprintf(p.stderr, "celguard mcp proxy: %v\n", err)
	return exitUsage
}

// newMCPPinsCmd is `celguard mcp pins`: the operator's view of a pins
// file, and the acceptance of a changed tool definition.
func newMCPPinsCmd(sio stdio) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "List the changed tool definitions a proxy refused, and accept one",
		Long: `A proxy started with --pins FILE pins each tool's definition on first use
and refuses a tool whose definition changed since (tool_changed), recording
the changed definition in FILE as pending. pins list shows what is pending;
pins accept SERVER TOOL pins the definition the proxy saw, so the proxies
using FILE offer and forward the tool again (a running proxy reads FILE
again when the tool is listed or called). Only that definition is
accepted: a server that changes the tool once more is refused again.`,
		Example: `  celguard mcp pins list --pins ~/.config/celguard/mcp-pins.json
  celguard mcp pins accept --pins ~/.config/celguard/mcp-pins.json fs write_file`,
	}
	cmd.PersistentFlags().StringVar(&path, "pins", "", "the pins file (required)")
	_ = cmd.MarkPersistentFlagRequired("pins")
	list := &cobra.Command{
		Use:     "list --pins FILE",
		Short:   "List the changed tool definitions waiting for an operator",
		Example: "  celguard mcp pins list --pins ~/.config/celguard/mcp-pins.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := mcpproxy.ReadPins(path)
			if err != nil {
				fmt.Fprintf(sio.stderr, "celguard mcp pins list: %v\n", err)
				return status(exitUsage)
			}
			pending := f.PendingPins()
			if len(pending) == 0 {
				fmt.Fprintln(sio.stdout, "no changed tool definition is waiting")
				return nil
			}
			for _, pp := range pending {
				fmt.Fprintf(sio.stdout, "%s %s: pinned %s, changed to %s\n", pp.Server, pp.Tool, pp.Pinned, pp.Seen)
			}
			return nil
		},
	}
	accept := &cobra.Command{
		Use:     "accept --pins FILE SERVER TOOL",
		Short:   "Accept the changed definition of a tool a proxy refused",
		Example: "  celguard mcp pins accept --pins ~/.config/celguard/mcp-pins.json fs write_file",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := mcpproxy.AcceptPin(path, args[0], args[1])
			if err != nil {
				fmt.Fprintf(sio.stderr, "celguard mcp pins accept: %v\n", err)
				return status(exitUsage)
			}
			fmt.Fprintf(sio.stdout, "accepted %s %s: pinned %s\n", args[0], args[1], d)
			return nil
		},
	}
	cmd.AddCommand(list, accept)
	return cmd
}

// mcpGateway is serve's MCP gateway over the servers the --mcp-config
// file names: the proxy built on the server's own engine (one composition
// root, one set of sessions' store, decision log and telemetry).
func mcpGateway(config, pins string, timeout time.Duration, stderr io.Writer, log *slog.Logger) (func(context.Context, serve.MCPHost) (serve.MCPGateway, error), error) {
	servers, err := mcpproxy.ReadServers(config)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	var ups []mcpproxy.Upstream
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		ups = append(ups, servers[name].Upstream(name, stderr))
	}
	cwd, _ := os.Getwd()
	return func(ctx context.Context, h serve.MCPHost) (serve.MCPGateway, error) {
		px, err := mcpproxy.New(ctx, mcpproxy.Config{Upstreams: ups, Guard: h.Guard, Sessions: h.Sessions, ApproveCommand: h.ApproveCommand,
			NoApprovals: h.NoApprovals, Decided: h.Decided, Cwd: cwd, CallTimeout: timeout, Pins: pins, Version: currentBuild().String(), Logger: log})
		if err != nil {
			return nil, err
		}
		return px, nil
	}, nil
}
