package statedir

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pendingOf takes the session's lock, reads its pending after-events and,
// with remove, removes them as the store does once applied.
func pendingOf(t *testing.T, d *Dir, id string, remove bool) []string {
	t.Helper()
	ls, err := d.Lock(context.Background(), id)
	require.NoError(t, err)
	defer ls.Close()
	evs, failed, bad, err := ls.Pending()
	require.NoError(t, err)
	require.NoError(t, bad)
	require.Empty(t, failed)
	var out []string
	var files []string
	for _, e := range evs {
		out = append(out, string(e.Event))
		files = append(files, e.File)
	}
	if remove {
		require.NoError(t, RemovePending(files))
	}
	return out
}

// TestPendingMarker: a Dir lists a session's pending files at its first
// event of the session, and after that only when the session's marker is
// there: RecordPending makes it, so a pending event is found by the next
// event; a pending file without its marker (written by an older celguard,
// or by a writer that died between the two) is found by a Dir's first
// event of the session, or once Cleanup marks it.
func TestPendingMarker(t *testing.T) {
	dir := t.TempDir()
	d := &Dir{Dir: dir}
	assert.Empty(t, pendingOf(t, d, "s", true))

	require.NoError(t, d.RecordPending("s", []byte(`{"n":1}`)))
	_, err := os.Stat(d.pendingMark("s"))
	require.NoError(t, err, "RecordPending made no marker")
	assert.Equal(t, []string{`{"n":1}`}, pendingOf(t, d, "s", false), "not found through its marker")
	assert.Equal(t, []string{`{"n":1}`}, pendingOf(t, d, "s", true), "a pending file not removed is found again")
	assert.Empty(t, pendingOf(t, d, "s", true))
	_, err = os.Stat(d.pendingMark("s"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the marker outlived its files")

	// A pending file without its marker.
	require.NoError(t, d.RecordPending("s", []byte(`{"n":2}`)))
	require.NoError(t, os.Remove(d.pendingMark("s")))
	assert.Empty(t, pendingOf(t, d, "s", false), "listed without a marker: the marker is not what is consulted")
	assert.Equal(t, []string{`{"n":2}`}, pendingOf(t, &Dir{Dir: dir}, "s", false), "a Dir's first event did not list")
	require.NoError(t, os.Remove(d.pendingMark("s")))
	_, err = d.Cleanup()
	require.NoError(t, err)
	assert.Equal(t, []string{`{"n":2}`}, pendingOf(t, d, "s", true), "Cleanup did not mark the session")
}

// TestPendingMarkerRace: after-events recorded while another goroutine
// takes the session's lock and applies what it finds, again and again,
// with one Dir (so through the marker): every event is applied, once.
func TestPendingMarkerRace(t *testing.T) {
	d := &Dir{Dir: t.TempDir()}
	assert.Empty(t, pendingOf(t, d, "s", true)) // the first event's listing
	const n = 300
	var wg sync.WaitGroup
	wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range n {
			if err := d.RecordPending("s", []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := map[string]int{}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		for _, e := range pendingOf(t, d, "s", true) {
			seen[e]++
		}
	}
	wg.Wait()
	for _, e := range pendingOf(t, d, "s", true) {
		seen[e]++
	}
	require.Len(t, seen, n, "events lost")
	for e, c := range seen {
		require.Equal(t, 1, c, "%s applied %d times", e, c)
	}
}

// TestPendingMarkerBetween: an event that takes the lock between a
// pending file's write and its marker's loses nothing: the file is found
// by the next event. (With the marker made first, the event in between
// would remove it and list before the file is there, and the file would
// be left unmarked.)
func TestPendingMarkerBetween(t *testing.T) {
	d := &Dir{Dir: t.TempDir()}
	assert.Empty(t, pendingOf(t, d, "s", true))
	t.Cleanup(func() { pendingWritten = nil })
	for _, ev := range []string{`{"n":1}`, `{"n":2}`} {
		var between []string
		pendingWritten = func() { between = append(between, pendingOf(t, d, "s", true)...) }
		require.NoError(t, d.RecordPending("s", []byte(ev)))
		pendingWritten = nil
		got := append(between, pendingOf(t, d, "s", true)...)
		assert.Equal(t, []string{ev}, got)
	}
	assert.Empty(t, pendingOf(t, d, "s", true))
}
