package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/mcpproxy"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store"
)

// mcpProxyParams is what `celguard mcp proxy` was asked to do.
type mcpProxyParams struct {
	policies  selection
	decisions decisionOptions
	name      string
	store     string
	timeout   time.Duration
	logLevel  string
	pins      string
	command   []string
	stdio
}

func newMCPCmd(sio stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Guard MCP servers: a policy-enforcing MCP proxy",
		Example: `  # In a client's mcpServers entry: the filesystem server behind the built-in policies
  celguard mcp proxy --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/project`,
	}
	cmd.AddCommand(newMCPProxyCmd(sio))
	return cmd
}

func newMCPProxyCmd(sio stdio) *cobra.Command {
	var p mcpProxyParams
	cmd := &cobra.Command{
		Use:   "proxy --name NAME [flags] -- COMMAND [ARGS...]",
		Short: "Serve an MCP server over stdio with every tool call decided by the policies",
		Long: `Proxy runs COMMAND as an MCP server (over its stdin and stdout) and serves
its tools over this process's stdin and stdout, for a client's mcpServers
entry. Every tools/call is decided by the policies (chosen as eval chooses
them) before it reaches the server and after it returns, with the tool
named mcp__NAME__TOOL as Claude Code and Codex name it, so mcp.server and
mcp.tool read the same through a hook and through the proxy.

A blocked, halted or unapproved call, and a call the server fails to
answer (it died, hung past --timeout or answered garbage: code
upstream_failed), is answered with an error result the model reads; the
proxy keeps serving, and starts the server again on the next call. An ask
is put to the user through MCP elicitation when the client declares it.
One client connection is one session (counters, halts); --store shares
the state with other processes. See docs/mcp.md.`,
		Example: `  celguard mcp proxy --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/project`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio = sio
			dash := cmd.ArgsLenAtDash()
			if dash < 0 || dash != 0 || len(args) == 0 {
				fmt.Fprintln(p.stderr, "celguard mcp proxy: give the server's command after --: celguard mcp proxy --name NAME -- COMMAND [ARGS...]")
				return status(exitUsage)
			}
			p.command = args
			return status(runMCPProxy(cmd.Context(), p))
		},
	}
	f := cmd.Flags()
	p.policies.addFlags(f)
	p.decisions.addFlags(f)
	f.StringVar(&p.name, "name", "", "the server's name: the policies see its tools as mcp__NAME__TOOL (required)")
	f.StringVar(&p.store, "store", "memory:", "the state store: memory: (in this process), redis://HOST:PORT/DB, valkey://HOST:PORT/DB or file:///DIR (docs/store.md)")
	f.DurationVar(&p.timeout, "timeout", mcpproxy.DefaultCallTimeout, "the longest the server may take to answer one call; past it the call is refused (upstream_failed)")
	f.StringVar(&p.pins, "pins", "", "a pins file: each tool's definition is pinned there on first use, and a tool whose definition changed since is not offered and refused (tool_changed) until its pin is removed")
	f.StringVar(&p.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	_ = cmd.MarkFlagRequired("name")
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
	if err := px.Run(ctx, p.clientTransport()); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return p.fail(err)
	}
	return exitOK
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
	st, err := store.Open(ctx, p.store)
	if err != nil {
		return mcpproxy.Config{}, nil, fmt.Errorf("--store: %w", err)
	}
	ecfg.Store = st
	cwd, _ := os.Getwd()
	command := p.command
	return mcpproxy.Config{
		Name: p.name,
		Upstream: func() mcp.Transport {
			c := exec.Command(command[0], command[1:]...)
			c.Stderr = p.stderr // the server's own messages, as a client shows them
			return &mcp.CommandTransport{Command: c}
		},
		Engine:      ecfg,
		Cwd:         cwd,
		CallTimeout: p.timeout,
		Pins:        p.pins,
		Version:     currentBuild().String(),
		Logger:      slog.New(slog.NewTextHandler(p.stderr, &slog.HandlerOptions{Level: level})),
	}, func() { st.Close() }, nil
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
