package serve

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/propagation"

	"github.com/celguard/celguard/hooks/daemonwire"
)

// The hook's decision daemon answers two wires on its one socket: HTTP
// (every route: /v1/status for `celguard doctor`, the hook route for any
// HTTP client) and the hook clients' JSON-RPC wire (daemonwire.Call: one
// request line and one answer line per connection), told apart by the
// connection's first byte, since an HTTP request starts with its method
// and a JSON-RPC message with '{'. One socket keeps one discovery (the
// socket's id and its directory's checks), one lock and one lifecycle
// (removed or replaced, the daemon stops) for both.

// daemonListener is a daemon's listener (Config.Daemon): it hands HTTP
// connections to the HTTP server through Accept, and answers JSON-RPC ones
// itself (serveDaemonConn). Each connection is told apart and answered on
// a worker of its own (Server.workers: long-lived goroutines whose stacks
// have grown to a decision's depth), so that one that sends nothing holds
// up no other (for at most daemonwire.ConnTimeout), and a JSON-RPC
// request is decided on that worker, with no further hand-off.
type daemonListener struct {
	net.Listener
	s     *Server
	conns chan net.Conn
	done  chan struct{}
	close sync.Once
	err   error // the inner Accept's last error, read after done
}

// daemonListener wraps ln, the daemon's socket; it starts accepting at
// once.
func (s *Server) daemonListener(ln net.Listener) net.Listener {
	l := &daemonListener{Listener: ln, s: s, conns: make(chan net.Conn), done: make(chan struct{})}
	// rpcConns counts accept itself, so that it never drops to zero while
	// a connection can still be added (sync.WaitGroup's rule).
	s.rpcConns.Add(1)
	go l.accept()
	return l
}

func (l *daemonListener) accept() {
	defer l.s.rpcConns.Done()
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				l.err = err
				l.close.Do(func() { close(l.done) })
				return
			}
			// Out of file descriptors and the like: wait and go on, as
			// http.Server does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		l.s.rpcConns.Add(1)
		l.s.workers.start(daemonConnJob{l: l, c: c})
	}
}

// daemonConnJob is a connection of the daemon's socket told apart and
// answered on a worker (daemonListener.dispatch).
type daemonConnJob struct {
	l *daemonListener
	c net.Conn
}

func (j daemonConnJob) run() { j.l.dispatch(j.c) }

// dispatch reads c's first byte and hands it on.
func (l *daemonListener) dispatch(c net.Conn) {
	defer l.s.rpcConns.Done()
	_ = c.SetReadDeadline(time.Now().Add(daemonwire.ConnTimeout))
	br := bufio.NewReader(c)
	b, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if b[0] == '{' {
		l.s.serveDaemonConn(c, br)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	select {
	case l.conns <- &peekedConn{Conn: c, r: br}:
	case <-l.done:
		c.Close()
	}
}

// Accept returns the next HTTP connection.
func (l *daemonListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close closes the socket; connections being answered are not closed.
func (l *daemonListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// serveDaemonConn answers the one JSON-RPC request on c (its first byte
// peeked into br): the request line within daemonwire.ConnTimeout, the
// event within the server's body bound, decided by daemonAnswer, the same
// handler as the HTTP route's, and the answer written within the
// decision's deadline and ConnTimeout. The decision runs here, on the
// connection's worker; if it has not returned by the server's deadline (a
// judge, an approver or a store that ignores its context), a timer
// answers the request with the deadline's error, as the HTTP route does,
// and closes the connection: the hook decides in process and the daemon
// goes on answering, while the late decision finishes on its worker and
// its answer is dropped (daemonReply).
func (s *Server) serveDaemonConn(c net.Conn, br *bufio.Reader) {
	defer c.Close()
	w := &daemonReply{Conn: c, r: br}
	_ = daemonwire.ServeConnID(w, int(daemonwire.MaxRequestLine(s.cfg.MaxBodyBytes)), func(id jsonrpc.ID, p daemonwire.HookParams) (daemonwire.HookResult, error) {
		_ = c.SetDeadline(time.Now().Add(s.cfg.Timeout + daemonwire.ConnTimeout))
		host, ok := s.hosts[p.Host]
		if !ok {
			return daemonwire.HookResult{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no host " + p.Host + " (code " + CodeNotFound + ")"}
		}
		late := time.AfterFunc(s.cfg.Timeout, func() {
			_, _ = w.Write(daemonwire.EncodeError(id, jsonrpc.CodeInternalError, s.deadlineMessage()+" (code "+CodeDeadlineExceeded+")"))
			_ = c.Close()
		})
		defer late.Stop()
		// The hook's trace (its TRACEPARENT), which the decision's span joins.
		ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": p.TraceParent, "tracestate": p.TraceState})
		res, derr := s.daemonAnswer(ctx, host, p, inline)
		if derr != nil {
			code := int64(jsonrpc.CodeInternalError)
			if derr.status == http.StatusBadRequest {
				code = jsonrpc.CodeInvalidParams
			}
			return daemonwire.HookResult{}, &jsonrpc.Error{Code: code, Message: derr.msg + " (code " + derr.code + ")"}
		}
		return res, nil
	})
}

// inline runs fn on the caller's goroutine: serveDaemonConn's decisions,
// whose deadline its timer keeps.
func inline(_ context.Context, fn func()) bool {
	fn()
	return true
}

// daemonReply is a daemon connection whose one answer is written once:
// by the request's worker, or by the deadline's timer
// (serveDaemonConn), whichever comes first; the other's write is dropped.
type daemonReply struct {
	net.Conn
	r        *bufio.Reader
	mu       sync.Mutex
	answered bool
}

// errAnswered says the connection's answer was already written.
var errAnswered = errors.New("the request was already answered")

func (c *daemonReply) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *daemonReply) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answered {
		return 0, errAnswered
	}
	c.answered = true
	return c.Conn.Write(p)
}
