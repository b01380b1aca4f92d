//go:build unix

package hostse2e

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/serve"
)

// daemonWait bounds the wait for a decision daemon to answer, or to stop,
// on a machine as loaded as CI's.
const daemonWait = 90 * time.Second

// daemonStatus asks the decision daemon on sock for its status (GET
// /v1/status on its unix socket), as doctor does.
func daemonStatus(sock string) (serve.AgentStatus, error) {
	var st serve.AgentStatus
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
	res, err := hc.Get("http://celguard-daemon/v1/status")
	if err != nil {
		return st, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, errors.New(res.Status)
	}
	return st, json.NewDecoder(res.Body).Decode(&st)
}

// waitDaemon waits until a decision daemon answers on a socket in the
// state directory state: the hook started it.
func waitDaemon(t *testing.T, state string) {
	t.Helper()
	deadline := time.Now().Add(daemonWait)
	for time.Now().Before(deadline) {
		socks, _ := filepath.Glob(filepath.Join(state, daemonwire.DirName, "*.sock"))
		for _, s := range socks {
			if st, err := daemonStatus(s); err == nil && st.Ready {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the hook started no decision daemon in %s within %s", state, daemonWait)
}

// stopDaemons stops every decision daemon of the state directory state
// and returns how many hook events they answered (their status): it
// removes each socket, on which the daemon stops, and waits until no
// daemon holds its lock. A daemon a late hook started meanwhile is
// stopped too.
func stopDaemons(t *testing.T, state string) (answered int64) {
	t.Helper()
	dir := filepath.Join(state, daemonwire.DirName)
	deadline := time.Now().Add(daemonWait)
	for {
		socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
		for _, s := range socks {
			if st, err := daemonStatus(s); err == nil {
				answered += st.DaemonAnswers
			}
			_ = os.Remove(s)
		}
		locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
		held := 0
		for _, l := range locks {
			if lockHeld(l) {
				held++
			}
		}
		if held == 0 && len(socks) == 0 {
			return answered
		}
		if time.Now().After(deadline) {
			t.Errorf("%d decision daemons in %s did not stop within %s", held, dir, daemonWait)
			return answered
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// lockHeld reports whether a daemon holds the lock file path (flock, as
// the daemon takes it).
func lockHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
