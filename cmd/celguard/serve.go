package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/mcpproxy"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/stdlib/shell"
	"github.com/celguard/celguard/store"
)

// defaultListen is where `celguard serve` listens without --listen: the
// loopback interface only, on celguard's port.
const defaultListen = "127.0.0.1:9743"

// serveParams is what `celguard serve` was asked to do.
type serveParams struct {
	policies    selection
	decisions   decisionOptions // --decision-log and its options, --monitor
	listen      string
	unix        string
	store       string
	tokenFile   string
	operatorTok string // --operator-token-file
	approverTok string // --approver-token-file, its older name
	tlsCert     string
	tlsKey      string
	approve     bool
	reload      time.Duration
	timeout     time.Duration
	maxBody     int64
	maxSessions int
	sessionIdle time.Duration
	logFormat   string
	logLevel    string
	mcpConfig   string // --mcp-config: the MCP gateway's servers
	mcpPins     string // --mcp-pins
	mcpTimeout  time.Duration
	stdio
}

func newServeCmd(sio stdio) *cobra.Command {
	var p serveParams
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR | --unix PATH] [flags]",
		Short: "Decide tool calls over HTTP for every agent on this machine or in a fleet",
		Long: `Serve runs celguard as a decision service. It compiles the policies once
(chosen as eval chooses them: with no flags, the recommended built-in bundle,
the user's and the project's policies) and answers:

Every route has one principal (serve.Routes, docs/serve.md):

  public    GET /healthz, /readyz
  agent     POST /v1/hooks/claude-code|codex|gemini|cursor|copilot|opencode (a host's hook
            event, answered as the command hook answers it);
            POST /v1/sessions, /v1/sessions/{id}/before, /after, /input,
            /output, /turns/start, /turns/end (the session API);
            GET /v1/status, /metrics, /openapi.json
  operator  POST and DELETE /v1/halt (a fleet halt and its lift),
            DELETE /v1/sessions/{id}, POST /v1/reload, GET /v1/status/details,
            GET /v1/approvals,
            GET|POST /v1/sessions/{id}/approvals,
            DELETE /v1/sessions/{id}/approvals/{id} (docs/approvals.md)

It listens on ` + defaultListen + ` by default (loopback only). Listening beyond
loopback needs --token-file: the agent routes must then carry
"Authorization: Bearer TOKEN". --tls-cert and --tls-key serve HTTPS;
--unix serves on a unix socket (mode 0600) instead of TCP.

--operator-token-file (its older name: --approver-token-file) turns the
operator routes on: they take that token and no other (the --token-file one
gets 403), so an agent that can reach the server cannot approve its own
requests, lift a halt or reset its counters by deleting its session. Keep
the file out of the agents' reach: owned by another user than the agents',
mode 0600 (for example root-owned under /etc/celguard, the server run by a
user of its own); a file that others may read is refused. Over HTTP an
approval is once or for the session; a persistent one is a reviewed rule
file written by 'celguard approve ID --always' on the user's machine. No
approval lifts a mandatory rule.

Every decision fails closed: a fault, a store that cannot be reached or the
--timeout passing is a block with a code; a hook endpoint always answers
HTTP 200 with the host's deny form, because Claude Code's http hooks let a
call run on any other answer or when the server is down. Where that
matters, install the forwarding command hook instead ('celguard hook
install HOST --server URL'), which fails closed.

--decision-log FILE appends every decision, arguments masked as the
policies declare, to FILE as one JSON line (docs/decision-log.md); a
decision the log cannot record is refused (decision_log_failed). --monitor
reports rules instead of enforcing them, as for eval and hook.

The policy files are read again every --reload-interval and on SIGHUP; a
changed set is compiled and put in force, sessions keep their counters, and
a set that does not compile leaves the last good one in force and is
reported by /v1/status/details. SIGINT or SIGTERM drains (readyz answers 503) and
stops.

State is kept in memory (--store memory:, the default, shared by this
server's sessions), or in a state store that replicas share: --store
redis://HOST:6379/0 (rediss:// with TLS), valkey://HOST:6379/0, or
file:///DIR (the hook state files). With a shared store, replicas behind a
load balancer share every session's counters, halts and approvals, and the
counters scoped to an agent, repository or org (docs/store.md). A decision
that cannot reach the store is a block with code store_unavailable, and
/readyz answers 503 while the store does not answer.`,
		Example: `  # Serve the built-in policies on 127.0.0.1:9743
  celguard serve

  # Beyond loopback: a token and TLS are needed
  celguard serve --listen 0.0.0.0:9743 --token-file /etc/celguard/token \
    --tls-cert /etc/celguard/tls.crt --tls-key /etc/celguard/tls.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.stdio = sio
			return status(runServe(cmd.Context(), p))
		},
	}
	f := cmd.Flags()
	p.policies.addFlags(f)
	p.decisions.addFlags(f)
	p.decisions.addTelemetryFlags(f)
	f.StringVar(&p.listen, "listen", defaultListen, "the TCP address to listen on; beyond loopback it needs --token-file")
	f.StringVar(&p.unix, "unix", "", "listen on this unix socket (created with mode 0600) instead of TCP")
	f.StringVar(&p.store, "store", "memory:", "the state store: memory: (in this process), redis://HOST:PORT/DB, valkey://HOST:PORT/DB or file:///DIR (docs/store.md)")
	f.StringVar(&p.tokenFile, "token-file", "", "a file whose content is the bearer token every request must carry")
	f.StringVar(&p.operatorTok, "operator-token-file", "", "a file (mode 0600, out of the agents' reach) whose content is the operator's bearer token: halt, lift, session delete, approvals and reload take it and no other; without it they answer 403")
	f.StringVar(&p.approverTok, "approver-token-file", "", "the older name of --operator-token-file")
	f.StringVar(&p.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	f.StringVar(&p.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.BoolVar(&p.approve, "approve", false, "an allow by an explicit rule approves the call on hosts that can (as for 'celguard hook')")
	f.DurationVar(&p.reload, "reload-interval", 2*time.Second, "how often the policy files are read again for a change (0: only on SIGHUP)")
	f.DurationVar(&p.timeout, "timeout", serve.DefaultTimeout, "the longest a decision may take; past it the call is blocked (deadline_exceeded)")
	f.Int64Var(&p.maxBody, "max-body-bytes", serve.DefaultMaxBodyBytes, "the largest request body; a larger one is refused (a hook: denied)")
	f.IntVar(&p.maxSessions, "max-sessions", serve.DefaultMaxSessions, "the most sessions kept at once; past it new sessions are refused (too_many_sessions)")
	f.DurationVar(&p.sessionIdle, "session-idle", serve.DefaultSessionIdle, "forget a session unused this long")
	f.StringVar(&p.logFormat, "log-format", "text", "log format on stderr: text or json")
	f.StringVar(&p.logLevel, "log-level", "info", "log level: debug (every request), info, warn or error")
	f.StringVar(&p.mcpConfig, "mcp-config", "", "serve an MCP gateway at /mcp (streamable HTTP, the agents' token) in front of the servers this JSON file's mcpServers names (docs/mcp.md)")
	f.StringVar(&p.mcpPins, "mcp-pins", "", "with --mcp-config: the pins file of the gateway's tool definitions (a changed one is refused until the operator accepts it: POST /v1/mcp/pins/accept)")
	f.DurationVar(&p.mcpTimeout, "mcp-timeout", mcpproxy.DefaultCallTimeout, "with --mcp-config: the longest an MCP server may take to answer one request (upstream_failed past it)")
	cmd.MarkFlagsRequiredTogether("tls-cert", "tls-key")
	cmd.MarkFlagsMutuallyExclusive("listen", "unix")
	cmd.MarkFlagsMutuallyExclusive("operator-token-file", "approver-token-file")
	return cmd
}

func runServe(ctx context.Context, p serveParams) int {
	log, err := serveLogger(p.stderr, p.logFormat, p.logLevel)
	if err != nil {
		return p.fail(err)
	}
	cfg, err := p.config(log)
	if err != nil {
		return p.fail(err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := store.Open(ctx, p.store)
	if err != nil {
		return p.fail(fmt.Errorf("--store: %w", err))
	}
	defer st.Close()
	cfg.Engine.Store, cfg.Store = st, store.Redact(p.store)
	if pinger, ok := st.(interface{ Ping(context.Context) error }); ok {
		cfg.Ready = pinger.Ping
	}
	ln, addr, err := serveListener(p)
	if err != nil {
		return p.fail(err)
	}
	if cfg.OperatorToken != "" {
		_, path := p.operatorFile()
		cfg.HookOptions.ApproveCommandFor = serveApproveCommand(addr, path)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return p.fail(serve.Run(ctx, []net.Listener{ln}, cfg))
}

// operatorFile is the flag that names the operator token file, and the
// file.
func (p serveParams) operatorFile() (flag, path string) {
	if p.approverTok != "" {
		return "--approver-token-file", p.approverTok
	}
	return "--operator-token-file", p.operatorTok
}

// fail reports err (the policies' diagnostics in full) and returns the
// exit code: exitOK for nil.
func (p serveParams) fail(err error) int {
	if err == nil {
		return exitOK
	}
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		_ = output.DiagnosticsText(p.stderr, ds, nil)
		err = errors.New("the policies do not compile")
	}
	fmt.Fprintf(p.stderr, "celguard serve: %v\n", err)
	return exitUsage
}

// config is the server's Config the flags ask for: the composition root's
// engine settings, the tokens (the operator's distinct from the agents'),
// the bounds and what Run needs; the store and the listener are the
// caller's.
func (p serveParams) config(log *slog.Logger) (serve.Config, error) {
	var token, operatorToken string
	var err error
	if p.tokenFile != "" {
		if token, err = readToken(p.tokenFile); err != nil {
			return serve.Config{}, err
		}
	}
	if flag, path := p.operatorFile(); path != "" {
		if operatorToken, err = readOperatorToken(flag, path); err != nil {
			return serve.Config{}, err
		}
		if operatorToken == token {
			return serve.Config{}, fmt.Errorf("%s and --token-file hold the same token: the operator token must be one the agents do not have", flag)
		}
	}
	if p.unix == "" {
		loopback, err := isLoopback(p.listen)
		if err != nil {
			return serve.Config{}, fmt.Errorf("--listen %q: %v", p.listen, err)
		}
		if !loopback && token == "" {
			return serve.Config{}, fmt.Errorf("--listen %s is beyond loopback: give a bearer token with --token-file (and TLS with --tls-cert, --tls-key), or listen on 127.0.0.1", p.listen)
		}
	}
	dopts := p.decisions
	dopts.flushTimeout = 5 * time.Second // at shutdown, not in a call's path
	ecfg, err := engineConfig(p.policies, dopts)
	if err != nil {
		return serve.Config{}, err
	}
	// The server decides for agents that may run on other machines: its
	// own file system does not say where their links point.
	ecfg.HostFS = false
	// The token files are the server's secrets: self-protection blocks a
	// tool call that reads or writes one.
	_, operatorPath := p.operatorFile()
	for _, f := range []string{p.tokenFile, operatorPath, p.mcpConfig, p.mcpPins} {
		if f == "" {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return serve.Config{}, err
		}
		ecfg.ProtectedFiles = append(ecfg.ProtectedFiles, abs)
	}
	cfg := serve.Config{Engine: ecfg, Token: token, OperatorToken: operatorToken, Version: currentBuild().String(),
		HookOptions: hooks.Options{Approve: p.approve}, MaxBodyBytes: p.maxBody, Timeout: p.timeout,
		MaxSessions: p.maxSessions, SessionIdle: p.sessionIdle, Logger: log, ReloadInterval: p.reload}
	if p.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(p.tlsCert, p.tlsKey)
		if err != nil {
			return serve.Config{}, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	if p.mcpConfig != "" {
		if cfg.MCP, err = mcpGateway(p.mcpConfig, p.mcpPins, p.mcpTimeout, p.stderr, log); err != nil {
			return serve.Config{}, err
		}
	} else if p.mcpPins != "" {
		return serve.Config{}, errors.New("--mcp-pins needs --mcp-config")
	}
	cfg.Started = func(srv *serve.Server) {
		set := srv.Engine().PolicySet()
		printWarnings(p.stderr, "celguard serve", append(layerWarnings(srv.Guard().Discovery(), set), p.decisions.warnings(set)...))
	}
	return cfg, nil
}

// serveApproveCommand is the approve command the hook endpoints' refusal
// of an ask names: `celguard approve --server ADDR --session-id SESSION
// --approver-token-file FILE`, the request id after it.
func serveApproveCommand(addr, tokenFile string) func(string) string {
	if abs, err := filepath.Abs(tokenFile); err == nil {
		tokenFile = abs
	}
	return func(session string) string {
		return "celguard approve --server " + shell.Quote(addr) + " --session-id " + shell.Quote(session) +
			" --approver-token-file " + shell.Quote(tokenFile)
	}
}

// serveListener listens where p says and returns the address as a URL.
func serveListener(p serveParams) (net.Listener, string, error) {
	if p.unix != "" {
		if fi, err := os.Lstat(p.unix); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(p.unix) // a socket left by an earlier server
		}
		old := syscall.Umask(0o177)
		ln, err := net.Listen("unix", p.unix)
		syscall.Umask(old)
		if err != nil {
			return nil, "", err
		}
		return ln, serve.Address(ln, false), nil
	}
	ln, err := net.Listen("tcp", p.listen)
	if err != nil {
		return nil, "", err
	}
	return ln, serve.Address(ln, p.tlsCert != ""), nil
}

// isLoopback reports whether the host of a listen address is a loopback
// address (or localhost). An empty host listens everywhere.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// readToken reads a bearer token file: its content, spaces trimmed, not
// empty.
func readToken(path string) (string, error) {
	return readTokenFlag("--token-file", path)
}

// readOperatorToken reads the approver token file, which no one but its
// owner may read or write: an agent that can read it could approve its
// own requests.
func readOperatorToken(flag, path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, describe(err))
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s %s has mode %04o: it must be 0600 (or stricter), owned by a user the agents do not run as", flag, path, fi.Mode().Perm())
	}
	return readTokenFlag(flag, path)
}

// readTokenFlag reads the token file path of flag.
func readTokenFlag(flag, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, describe(err))
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("%s %s is empty", flag, path)
	}
	if strings.ContainsAny(t, " \t\r\n") {
		return "", fmt.Errorf("%s %s: the token must be one word", flag, path)
	}
	return t, nil
}

// serveLogger is the structured logger on w.
func serveLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
