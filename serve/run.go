package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Run builds a server with cfg and answers on every listener until ctx
// ends (HTTPS with cfg.TLS): it reloads the policies on SIGHUP and every ReloadInterval, and on
// the end of ctx drains (/readyz answers 503), waits for the requests in
// flight and closes the listeners. The error is New's (a
// policy.Diagnostics when the policies do not compile) or a listener's;
// a clean stop is nil. The caller makes ctx end on SIGINT and SIGTERM
// (signal.NotifyContext) when it wants them to stop the server.
func Run(ctx context.Context, listeners []net.Listener, cfg Config) error {
	defer func() {
		for _, ln := range listeners {
			_ = ln.Close()
		}
	}()
	if len(listeners) == 0 {
		return errors.New("serve.Run: no listener")
	}
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	if cfg.Started != nil {
		cfg.Started(srv)
	}
	if cfg.Daemon != nil {
		// The hook clients' JSON-RPC wire beside HTTP on the same socket.
		listeners = slices.Clone(listeners)
		for i, ln := range listeners {
			listeners[i] = srv.daemonListener(ln)
		}
	}
	log := srv.log
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg.TLS,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	srv.stop.Store(&stop)
	srv.used.Store(time.Now().UnixNano())
	if cfg.Daemon != nil && cfg.Daemon.IdleExit > 0 {
		go srv.exitWhenIdle(ctx, cfg.Daemon.IdleExit)
	}
	// SIGHUP is caught before the server says it listens: one sent after
	// that line would otherwise be lost (a process started ignoring it,
	// under nohup) or stop the server (Go's default for SIGHUP).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go srv.reloadOnHangup(ctx, hup)
	go srv.WatchBundles(ctx)
	if cfg.ReloadInterval > 0 {
		go srv.Watch(ctx, cfg.ReloadInterval)
	}
	served := make(chan error, len(listeners))
	for _, ln := range listeners {
		go func() {
			if cfg.TLS != nil {
				served <- hs.ServeTLS(ln, "", "") // the certificates are cfg.TLS's
			} else {
				served <- hs.Serve(ln)
			}
		}()
		log.Info("celguard serve listening", "address", Address(ln, cfg.TLS != nil), "policy_digest", srv.Status().PolicyDigest,
			"store", srv.Status().Store, "auth", cfg.Token != "", "operator", cfg.OperatorToken != "", "tls", cfg.TLS != nil)
		if cfg.OperatorToken != "" && ln.Addr().Network() == "tcp" {
			log.Info("the operator's console", "url", strings.TrimSuffix(Address(ln, cfg.TLS != nil), "/")+"/ui/")
		}
	}
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	srv.Drain()
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	shut, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if serr := hs.Shutdown(shut); err == nil && serr != nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	// The daemon's JSON-RPC answers in flight, within the same bound.
	rpcDone := make(chan struct{})
	go func() { srv.rpcConns.Wait(); close(rpcDone) }()
	select {
	case <-rpcDone:
	case <-shut.Done():
	}
	// The decision log and the telemetry export (flushed within its
	// bound).
	if srv.mcp != nil {
		if cerr := srv.mcp.Close(); cerr != nil {
			log.Warn("closing the MCP gateway", "error", cerr)
		}
	}
	if cerr := srv.Guard().Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// reloadOnHangup reloads the policies on every SIGHUP (hup) until ctx
// ends.
func (s *Server) reloadOnHangup(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if _, err := s.Reload(true); err == nil {
				s.log.Info("reloaded on SIGHUP", "policy_digest", s.Status().PolicyDigest)
			}
		}
	}
}

// Address is a listener's address as a URL: http(s)://HOST:PORT, or
// unix:PATH for a unix socket.
func Address(ln net.Listener, tls bool) string {
	if ln.Addr().Network() == "unix" {
		return "unix:" + ln.Addr().String()
	}
	if tls {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}

// exitWhenIdle stops the server once no hook event came for idle.
func (s *Server) exitWhenIdle(ctx context.Context, idle time.Duration) {
	tick := min(idle/4, 30*time.Second)
	t := time.NewTicker(max(tick, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, s.used.Load())) >= idle {
				s.log.Info("the daemon was idle; stopping", "idle", idle.String())
				s.Stop()
				return
			}
		}
	}
}

// Stop makes Run return, as the end of its context does; before Run it
// does nothing.
func (s *Server) Stop() {
	if stop := s.stop.Load(); stop != nil {
		(*stop)()
	}
}
