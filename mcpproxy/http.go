package mcpproxy

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Path is where the proxy answers MCP's streamable HTTP transport, alone
// (Serve) and inside `celguard serve`.
const Path = "/mcp"

// Serve answers MCP's streamable HTTP transport at Path on ln until ctx
// ends. With a token, every request must carry it as a bearer token (401
// otherwise); without one, ln must be a loopback address, which the
// caller checks (IsLoopback).
func (p *Proxy) Serve(ctx context.Context, ln net.Listener, token string) error {
	mux := http.NewServeMux()
	mux.Handle(Path, RequireToken(token, p.Handler()))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Requests in flight get a moment to finish; the sessions' event
	// streams never end by themselves, so what is left is closed.
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if serr := hs.Shutdown(shut); serr != nil {
		_ = hs.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// RequireToken lets through the requests that carry token as a bearer
// token (compared in constant time); every request when token is "".
func RequireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="celguard"`)
			http.Error(w, "celguard: this MCP proxy needs its bearer token (code unauthorized)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether addr (host:port) listens on a loopback
// address only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
