//go:build unix

package daemonwire

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/store/statedir"
)

// askFixture is a state directory with its key and the daemon's socket
// directory (0700), and the request the lean client makes for an event.
type askFixture struct {
	key    *statedir.Key
	req    Request
	socket string
}

func newAskFixture(t *testing.T) *askFixture {
	// Not t.TempDir(): a test's name could make the socket's path longer
	// than a unix socket takes.
	state, err := os.MkdirTemp("", "dw")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(state) })
	key, err := statedir.LoadKey(state)
	require.NoError(t, err)
	env := map[string]string{"HOME": state}
	r := Request{Exe: "/usr/local/bin/celguard", WorkDir: "/w", Event: []byte(`{"hook_event_name":"PreToolUse"}`),
		Args:   HookArgs{Host: "claude-code", StateDir: state, Timeout: time.Second, KeepDays: 7, MaxStateBytes: 1 << 20},
		Getenv: func(k string) string { return env[k] }}
	sock, _, err := r.Args.Socket(r.Exe, r.Getenv)
	require.NoError(t, err)
	require.NoError(t, CheckDir(filepath.Dir(sock), true))
	t.Setenv("CELGUARD_DAEMON", "")
	return &askFixture{key: key, req: r, socket: sock}
}

// serve answers every connection on the fixture's socket with fn until
// the test ends; it returns how many connections came.
func (f *askFixture) serve(t *testing.T, fn func(c net.Conn)) *atomic.Int64 {
	ln, err := net.Listen("unix", f.socket)
	require.NoError(t, err)
	var wg sync.WaitGroup
	n := new(atomic.Int64)
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			wg.Go(func() { defer c.Close(); fn(c) })
		}
	})
	return n
}

// signed answers as the daemon does, with body, signed with key.
func signed(key *statedir.Key, body string) func(HookParams) (HookResult, error) {
	return func(p HookParams) (HookResult, error) {
		r := HookResult{Digest: "d", Version: "v", Body: []byte(body)}
		r.MAC = hex.EncodeToString(Sum(key, r.Answer(p)))
		return r, nil
	}
}

// TestAskOverTheWire: a daemon that signs its answer with the state key
// is used; the answer is the command answer it signed.
func TestAskOverTheWire(t *testing.T) {
	f := newAskFixture(t)
	asked := make(chan HookParams, 1)
	f.serve(t, func(c net.Conn) {
		_ = ServeConn(c, int(MaxRequestLine(8<<20)), func(p HookParams) (HookResult, error) {
			asked <- p
			return signed(f.key, `{"stdout":"{\"decision\":\"block\"}","stderr":"no","exit":0}`)(p)
		})
	})
	a, err := Ask(context.Background(), f.req)
	require.NoError(t, err)
	assert.Equal(t, CommandAnswer{Stdout: `{"decision":"block"}`, Stderr: "no", Exit: 0}, a)
	got := <-asked
	assert.Equal(t, f.req.Event, got.Event)
	assert.Equal(t, "claude-code", got.Host)
	assert.Equal(t, "/w", got.WorkDir)
}

// TestAskRefusesBadDaemons: a process on the socket that answers anything
// but a signed answer to this request, or answers nothing in time, is an
// error (the lean client hands the event to `celguard hook`), within the
// request's bound (--timeout and 2 s), having read no more than the
// answer's bound.
func TestAskRefusesBadDaemons(t *testing.T) {
	otherKey, err := statedir.LoadKey(t.TempDir())
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		fake func(f *askFixture) func(net.Conn)
		want string // in the error
	}{
		{"writes garbage", func(*askFixture) func(net.Conn) {
			return func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}\n")) }
		}, "no answer"},
		{"writes a line longer than the bound", func(*askFixture) func(net.Conn) {
			return func(c net.Conn) {
				chunk := bytes.Repeat([]byte("a"), 64<<10)
				for range MaxAnswerLine/len(chunk) + 16 {
					if _, err := c.Write(chunk); err != nil {
						return // the client stopped reading
					}
				}
			}
		}, ErrLineTooLong.Error()},
		{"never answers", func(*askFixture) func(net.Conn) {
			return func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }
		}, "timeout"},
		{"answers slowly, one byte at a time", func(f *askFixture) func(net.Conn) {
			return func(c net.Conn) {
				line, err := ReadLine(c, int(MaxRequestLine(8<<20)))
				if err != nil {
					return
				}
				id, p, _ := DecodeRequest(line)
				res, _ := signed(f.key, `{"stdout":"","stderr":"","exit":0}`)(p)
				out, _ := EncodeResult(id, res)
				for _, b := range out {
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}, "timeout"},
		{"closes at once", func(*askFixture) func(net.Conn) { return func(net.Conn) {} }, "no answer"},
		{"closes in the middle of its answer", func(f *askFixture) func(net.Conn) {
			return func(c net.Conn) {
				line, _ := ReadLine(c, int(MaxRequestLine(8<<20)))
				id, p, _ := DecodeRequest(line)
				res, _ := signed(f.key, `{"stdout":"","stderr":"","exit":0}`)(p)
				out, _ := EncodeResult(id, res)
				_, _ = c.Write(out[:len(out)-2])
			}
		}, io.ErrUnexpectedEOF.Error()},
		{"answers an error", func(*askFixture) func(net.Conn) {
			return func(c net.Conn) {
				_ = ServeConn(c, 1<<20, func(HookParams) (HookResult, error) { return HookResult{}, errors.New("stale") })
			}
		}, "the daemon answered an error"},
		{"signs with another key", func(*askFixture) func(net.Conn) {
			return func(c net.Conn) {
				_ = ServeConn(c, 1<<20, signed(otherKey, `{"stdout":"","stderr":"","exit":0}`))
			}
		}, "MAC does not check"},
		{"replays a signed answer to another request", func(f *askFixture) func(net.Conn) {
			nonce, _ := NewNonce()
			p := HookParams{Nonce: nonce, Host: f.req.Args.Host, WorkDir: f.req.WorkDir, Event: f.req.Event}
			old, _ := signed(f.key, `{"stdout":"","stderr":"","exit":0}`)(p)
			return func(c net.Conn) {
				_ = ServeConn(c, 1<<20, func(HookParams) (HookResult, error) { return old, nil })
			}
		}, "MAC does not check"},
		{"answers with the old nonce as id", func(f *askFixture) func(net.Conn) {
			return func(c net.Conn) {
				_, _ = ReadLine(c, 1<<20)
				nonce, _ := NewNonce()
				_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":"` + nonce + `","result":{"body":"e30="}}` + "\n"))
			}
		}, "another request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAskFixture(t)
			asked := f.serve(t, c.fake(f))
			_, err := Ask(context.Background(), f.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.EqualValues(t, 1, asked.Load())
		})
	}
}

// TestAskCancelled: a cancelled context ends the wait for a daemon that
// does not answer.
func TestAskCancelled(t *testing.T) {
	f := newAskFixture(t)
	f.req.Args.Timeout = time.Hour
	f.serve(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, err := Ask(ctx, f.req)
	require.Error(t, err)
}

// TestAskNoDaemon: no socket, or a socket in a directory that is not the
// user's alone, is an error before anything is sent.
func TestAskNoDaemon(t *testing.T) {
	f := newAskFixture(t)
	_, err := Ask(context.Background(), f.req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer")
	asked := f.serve(t, func(c net.Conn) { _ = ServeConn(c, 1<<20, signed(f.key, `{"stdout":"","stderr":"","exit":0}`)) })
	require.NoError(t, os.Chmod(filepath.Dir(f.socket), 0o750))
	_, err = Ask(context.Background(), f.req)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "directory: "), err.Error())
	assert.EqualValues(t, 0, asked.Load())
}
