//go:build unix

package statedir

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPendingMarkerFIFO: a FIFO made where a session's pending marker goes
// (by anyone who can write the state directory) neither hangs
// RecordPending, which opens the marker to write (a FIFO without a reader
// would wait for one), nor hides the pending file: it counts as a marker,
// and the event that lists replaces it with a marker of its own.
func TestPendingMarkerFIFO(t *testing.T) {
	d := &Dir{Dir: t.TempDir()}
	assert.Empty(t, pendingOf(t, d, "s", true)) // the Dir's first listing
	require.NoError(t, syscall.Mkfifo(d.pendingMark("s"), 0o600))
	require.NoError(t, d.RecordPending("s", []byte(`{"n":1}`)), "RecordPending through a FIFO marker")
	assert.Equal(t, []string{`{"n":1}`}, pendingOf(t, d, "s", false), "a pending file behind a FIFO marker was not found")
	fi, err := os.Lstat(d.pendingMark("s"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the FIFO was not replaced by a marker: %v", fi.Mode())
	assert.Equal(t, []string{`{"n":1}`}, pendingOf(t, d, "s", true))
	assert.Empty(t, pendingOf(t, d, "s", true))
}

// TestLoadRefusesFIFO: a FIFO, or a directory, made where a session's
// state file goes (by anyone who can write the state directory) neither
// hangs Load, which opens the state to read it (a FIFO without a writer
// would wait for one, and a hook that hangs is a call some hosts let
// through), nor reads as a state: it is a tampered state, which the
// session restores fail-closed; the next Save replaces it.
func TestLoadRefusesFIFO(t *testing.T) {
	for name, mk := range map[string]func(string) error{
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
	} {
		t.Run(name, func(t *testing.T) {
			d := &Dir{Dir: t.TempDir()}
			require.NoError(t, mk(d.Path("s")))
			ls, err := d.Lock(context.Background(), "s")
			require.NoError(t, err)
			defer ls.Close()
			done := make(chan error, 1)
			go func() {
				_, found, err := ls.Load()
				assert.True(t, found, "a FIFO or a directory reads as no state")
				done <- err
			}()
			select {
			case err := <-done:
				var tampered *TamperedError
				require.ErrorAs(t, err, &tampered)
				assert.Contains(t, tampered.Why, "not a regular file")
			case <-time.After(10 * time.Second):
				t.Fatal("Load hangs on a FIFO at the state file")
			}
			if name == "fifo" {
				_, err = ls.Save([]byte(`{"id":"s","turn":1}`))
				require.NoError(t, err)
				st, found, err := ls.Load()
				require.NoError(t, err)
				assert.True(t, found)
				assert.JSONEq(t, `{"id":"s","turn":1}`, string(st))
			}
		})
	}
}

// TestKeyRefusesFIFO: a FIFO made where the state key goes is refused at
// once ("is not a regular file"), by the hook (Key) and by the lean client
// (ReadKey), instead of hanging the read of the key at every event.
func TestKeyRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, KeyFile), 0o600))
	done := make(chan error, 1)
	go func() {
		_, err := ReadKey(dir)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("reading the key hangs on a FIFO")
	}
}
