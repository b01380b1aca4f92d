package statedir

import (
	"context"
	"fmt"
	"time"
)

// lockFile takes the lock on path, creating the file, waiting (with a
// growing pause, at most 16 ms) until ctx ends. tryLockFile is the
// platform's way of trying once (lock_unix.go, lock_other.go).
func lockFile(ctx context.Context, path string) (*fileLock, error) {
	delay := 500 * time.Microsecond
	for {
		l, err := tryLockFile(path)
		if err != nil {
			return nil, err
		}
		if l != nil {
			return l, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("gave up waiting for %s: %w", path, ctx.Err())
		case <-t.C:
		}
		if delay < 16*time.Millisecond {
			delay *= 2
		}
	}
}
