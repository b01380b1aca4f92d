//go:build !unix

package daemonwire

import (
	"os"
	"time"
)

// dial fails: no unix sockets here (the daemon needs them, and file
// owners; CheckDir refuses first).
func dial(string, time.Duration) (*os.File, error) { return nil, ErrNoDaemonSockets }
