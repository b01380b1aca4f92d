//go:build unix

package statedir

import (
	"os"
	"syscall"
	"testing"

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
