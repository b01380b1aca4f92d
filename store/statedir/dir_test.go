package statedir

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFileNameIsSafe: no session id can name a path outside the state
// directory, and ids that sanitise alike still get their own files.
func TestFileNameIsSafe(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"../../etc/passwd", "..", ".", "/abs/path", `a\b`, "a/b", "a_b", "a b", "abc123",
		"x\x00y", strings.Repeat("z", 500), "ünïcode", "-rf", ".hidden"} {
		name := FileName(id)
		assert.Equal(t, name, filepath.Base(name), id)
		assert.NotContains(t, name, "..", id)
		assert.True(t, strings.HasPrefix(name, "s-") && strings.HasSuffix(name, ".json"), name)
		assert.LessOrEqual(t, len(name), 100, id)
		if other, dup := seen[name]; dup {
			t.Errorf("%q and %q share %s", id, other, name)
		}
		seen[name] = id
		dir := t.TempDir()
		s := &Dir{Dir: dir}
		assert.Equal(t, dir, filepath.Dir(s.Path(id)), id)
	}
}

// TestStoreRoundTrip: state saved under the lock is what the next lock
// loads.
func TestStoreRoundTrip(t *testing.T) {
	s := &Dir{Dir: filepath.Join(t.TempDir(), "new", "dir")}
	ss, err := s.Lock(context.Background(), "abc")
	require.NoError(t, err)
	st, found, err := ss.Load()
	require.NoError(t, err)
	assert.False(t, found)
	assert.Nil(t, st)
	_, err = ss.Save([]byte(`{"id":"abc","turn":7,"approvals":["k"]}`))
	require.NoError(t, err)
	require.NoError(t, ss.Close())

	ss, err = s.Lock(context.Background(), "abc")
	require.NoError(t, err)
	defer ss.Close()
	got, found, err := ss.Load()
	require.NoError(t, err)
	assert.True(t, found)
	assert.JSONEq(t, `{"id":"abc","turn":7,"approvals":["k"]}`, string(got))
	fi, err := os.Stat(s.Dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	// Another session's file, signed for that session, is tampered.
	data, _ := os.ReadFile(ss.Path())
	require.NoError(t, os.WriteFile(s.Path("other"), data, 0o600))
	os2, err := s.Lock(context.Background(), "other")
	require.NoError(t, err)
	defer os2.Close()
	_, _, err = os2.Load()
	var te *TamperedError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "its MAC does not check", te.Why)
}

// TestStoreCap: a state that would grow past the cap is not written, and
// the old state stays.
func TestStoreCap(t *testing.T) {
	s := &Dir{Dir: t.TempDir(), MaxBytes: 200}
	ss, err := s.Lock(context.Background(), "a")
	require.NoError(t, err)
	defer ss.Close()
	_, err = ss.Save([]byte(`{"id":"a","turn":1}`))
	require.NoError(t, err)
	_, err = ss.Save([]byte(`{"id":"a","approvals":["` + strings.Repeat("k", 300) + `"]}`))
	assert.ErrorContains(t, err, "more than the cap of 200")
	st, _, err := ss.Load()
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"a","turn":1}`, string(st))
}

// TestConcurrentSessionUpdates: goroutines (each as a hook process would)
// lock, load, add one and save; no update is lost.
func TestConcurrentSessionUpdates(t *testing.T) {
	s := &Dir{Dir: t.TempDir()}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss, err := s.Lock(context.Background(), "shared")
			if err != nil {
				errs <- err
				return
			}
			defer ss.Close()
			st, _, err := ss.Load()
			var state struct {
				ID   string `json:"id"`
				Turn int    `json:"turn"`
			}
			if err == nil && st != nil {
				err = json.Unmarshal(st, &state)
			}
			if err == nil {
				state.ID = "shared"
				state.Turn++
				st, _ = json.Marshal(state)
				_, err = ss.Save(st)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ss, err := s.Lock(context.Background(), "shared")
	require.NoError(t, err)
	defer ss.Close()
	st, _, err := ss.Load()
	require.NoError(t, err)
	assert.JSONEq(t, fmt.Sprintf(`{"id":"shared","turn":%d}`, n), string(st))
}

// TestCleanup removes old sessions and their lock files, keeps recent ones
// and held ones, and runs at most every few hours through MaybeCleanup.
func TestCleanup(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s := &Dir{Dir: dir, MaxAge: 24 * time.Hour, Now: func() time.Time { return now }}
	mk := func(id string, age time.Duration) string {
		ss, err := s.Lock(context.Background(), id)
		require.NoError(t, err)
		_, err = ss.Save([]byte(`{"id":"` + id + `"}`))
		require.NoError(t, err)
		require.NoError(t, ss.Close())
		p := s.Path(id)
		old := now.Add(-age)
		require.NoError(t, os.Chtimes(p, old, old))
		require.NoError(t, os.Chtimes(strings.TrimSuffix(p, ".json")+".lock", old, old))
		return p
	}
	oldPath := mk("old", 48*time.Hour)
	newPath := mk("new", time.Hour)
	heldPath := mk("held", 48*time.Hour)
	held, err := s.Lock(context.Background(), "held")
	require.NoError(t, err)
	defer held.Close()

	n, err := s.MaybeCleanup()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, oldPath)
	assert.NoFileExists(t, strings.TrimSuffix(oldPath, ".json")+".lock")
	assert.FileExists(t, newPath)
	assert.FileExists(t, heldPath, "a session in use is never removed")

	// Within the interval, nothing is scanned.
	mk("old2", 48*time.Hour)
	n, err = s.MaybeCleanup()
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	now = now.Add(cleanupEvery + time.Minute)
	n, err = s.MaybeCleanup()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestSpareFile: Saves through the session's spare file load as the
// states saved, one after the other (a new Dir each time, so that nothing
// is remembered); the spare is never taken for a session (Sessions);
// Remove takes it with the state; Cleanup removes an old one.
func TestSpareFile(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		s := &Dir{Dir: dir}
		ls, err := s.Lock(context.Background(), "sp")
		require.NoError(t, err)
		want := fmt.Sprintf(`{"id":"sp","turn":%d%s}`, i, strings.Repeat(" ", 5-i))
		_, err = ls.Save([]byte(want))
		require.NoError(t, err)
		require.NoError(t, ls.Close())
		ls, err = (&Dir{Dir: dir}).Lock(context.Background(), "sp")
		require.NoError(t, err)
		got, found, err := ls.Load()
		require.NoError(t, err)
		require.True(t, found)
		assert.JSONEq(t, want, string(got), "save %d", i)
		require.NoError(t, ls.Close())
	}
	ids, err := (&Dir{Dir: dir}).Sessions()
	require.NoError(t, err)
	assert.Equal(t, []string{"sp"}, ids)

	s := &Dir{Dir: dir}
	spare := spareOf(s.Path("sp"))
	if _, err := os.Stat(spare); err != nil {
		t.Logf("no spare file (%v): this file system has no atomic exchange", err)
	}
	ls, err := s.Lock(context.Background(), "sp")
	require.NoError(t, err)
	require.NoError(t, ls.Remove())
	require.NoError(t, ls.Close())
	_, err = os.Stat(spare)
	assert.ErrorIs(t, err, os.ErrNotExist, "Remove left the spare file, which holds an earlier state")

	// An old session's spare goes with it.
	ls, err = s.Lock(context.Background(), "old")
	require.NoError(t, err)
	for range 3 {
		_, err = ls.Save([]byte(`{"id":"old"}`))
		require.NoError(t, err)
	}
	require.NoError(t, ls.Close())
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{s.Path("old"), spareOf(s.Path("old"))} {
		_ = os.Chtimes(p, old, old)
	}
	_, err = s.Cleanup()
	require.NoError(t, err)
	_, err = os.Stat(spareOf(s.Path("old")))
	assert.ErrorIs(t, err, os.ErrNotExist, "Cleanup left an old spare file")
}

// TestSaveAnyJSONLoads: a state in any JSON form (spaces, a raw '&', '<'
// or '>', as a shell command has) is saved in json.Marshal's form and
// signed over those bytes, so that it loads back as saved; a MAC over the
// bytes as given made such a file read as tampered. A pending event
// likewise.
func TestSaveAnyJSONLoads(t *testing.T) {
	for _, st := range []string{
		`{"id":"sp","cmd":"a && b > c < d"}`,
		`{"id":"sp", "turn": 1}`,
		"{\n  \"id\": \"sp\",\n  \"s\": \"\u2028\"\n}",
		`{"id":"sp","cmd":"a \u0026\u0026 b"}`,
	} {
		dir := t.TempDir()
		ls, err := (&Dir{Dir: dir}).Lock(context.Background(), "sp")
		require.NoError(t, err)
		written, err := ls.Save([]byte(st))
		require.NoError(t, err)
		require.NoError(t, ls.Close())
		ls, err = (&Dir{Dir: dir}).Lock(context.Background(), "sp")
		require.NoError(t, err)
		got, found, err := ls.Load()
		require.NoError(t, err, st)
		require.True(t, found)
		assert.Equal(t, string(written), string(got), "Save returns the state as Load reads it")
		assert.JSONEq(t, st, string(got))
		require.NoError(t, ls.Close())

		d := &Dir{Dir: dir}
		require.NoError(t, d.RecordPending("sp", []byte(st)))
		ls, err = d.Lock(context.Background(), "sp")
		require.NoError(t, err)
		evs, failed, bad, err := ls.Pending()
		require.NoError(t, err)
		require.NoError(t, bad, st)
		assert.Empty(t, failed)
		require.Len(t, evs, 1)
		assert.JSONEq(t, st, string(evs[0].Event))
		require.NoError(t, ls.Close())
	}
}

// TestReadUpTo: readUpTo reads what io.ReadAll over the same limit reads,
// for files shorter than, as long as and longer than the limit, empty, and
// growing while read (the size it starts from is only a guess).
func TestReadUpTo(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 3215, 9999, 10000, 10001, 70000} {
		p := filepath.Join(dir, fmt.Sprint(size))
		data := []byte(strings.Repeat("x", size))
		require.NoError(t, os.WriteFile(p, data, 0o600))
		for _, n := range []int64{1, 512, 10000, 1 << 20} {
			f, err := os.Open(p)
			require.NoError(t, err)
			got, err := readUpTo(f, n)
			f.Close()
			require.NoError(t, err)
			assert.Equal(t, data[:min(int64(size), n)], got, "size %d, limit %d", size, n)
		}
	}
	// Growing after its size was taken.
	p := filepath.Join(dir, "grows")
	require.NoError(t, os.WriteFile(p, []byte("ab"), 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Stat()
	require.NoError(t, err)
	w, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = w.WriteString(strings.Repeat("c", 5000))
	w.Close()
	got, err := readUpTo(f, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, 5002, len(got))
}
