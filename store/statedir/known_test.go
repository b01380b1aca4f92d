package statedir

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sealPayloads are valid JSON payloads for seal and sealValid: compacted
// ones, and ones json.Marshal rewrites (spaces, newlines, HTML characters,
// U+2028 and U+2029, escapes).
var sealPayloads = []string{
	`{}`, `{"id":"a"}`, `[]`, `"x"`, `1`, `null`,
	`{"id":"a","recent":[{"summary":"go test ./...","n":1}]}`,
	`{"s":"a \" b"}`, `{"s":"\\"}`, `{"s":"\\\\ "}`, `{"s":"\u003c"}`, `{"s":"\u2028"}`,
	`{ "id":"a"}`, `{"id": "a"}`, "{\"id\":\"a\"}\n", "{\n\"id\":\"a\"}", "{\"id\":\"a\"}\t",
	`{"s":"<script>"}`, `{"s":"a&b"}`, `{"s":"a>b"}`, "{\"s\":\"\u2028\"}", "{\"s\":\"\u2029\"}",
	"{\"s\":\"\u2027\"}", "{\"s\":\"\u202a\"}", "{\"s\":\"\xe2\x80\"}", "{\"s\":\"caf\xc3\xa9\"}",
	"{\"s\":\"\xff\"}", `{"s":"\" "}`, `{"a":[1, 2]}`, `{"a":"\\\" "}`,
}

// TestSealValidIsSeal: sealValid writes exactly what seal (json.Marshal)
// writes, and says the payload is in the file as is exactly when it is.
func TestSealValidIsSeal(t *testing.T) {
	key, err := LoadKey(t.TempDir())
	require.NoError(t, err)
	for _, p := range sealPayloads {
		checkSealValid(t, key, []byte(p))
	}
}

func checkSealValid(t *testing.T, key *Key, payload []byte) {
	t.Helper()
	want, err := seal(key, stateFormat, domainState, "sess", payload)
	require.NoError(t, err, "%q", payload)
	got, asis, err := sealValid(key, stateFormat, domainState, "sess", payload)
	require.NoError(t, err, "%q", payload)
	require.Equal(t, string(want), string(got), "%q", payload)
	var sf stateFile
	require.NoError(t, json.Unmarshal(got, &sf))
	assert.Equal(t, asis, string(sf.State) == string(payload), "%q: asis %v", payload, asis)
}

// FuzzSealValid: for any valid JSON, sealValid is seal.
func FuzzSealValid(f *testing.F) {
	for _, p := range sealPayloads {
		f.Add([]byte(p))
	}
	key := &Key{}
	copy(key.k[:], []byte("a fixed key for the fuzz test..."))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if !json.Valid(payload) {
			return
		}
		checkSealValid(t, key, payload)
	})
}

// TestLoadKnownIsExact: a state file read back with the bytes this Dir
// last wrote or checked is answered from memory, and any other file is
// checked in full: another writer's, an edited one, one rolled back to an
// older signed state, one removed.
func TestLoadKnownIsExact(t *testing.T) {
	dir := t.TempDir()
	s := &Dir{Dir: dir}
	other := &Dir{Dir: dir} // another process on the same directory
	ctx := context.Background()
	save := func(d *Dir, st string) []byte {
		t.Helper()
		ls, err := d.Lock(ctx, "a")
		require.NoError(t, err)
		defer ls.Close()
		_, err = ls.Save([]byte(st))
		require.NoError(t, err)
		data, err := os.ReadFile(ls.Path())
		require.NoError(t, err)
		return data
	}
	load := func(d *Dir) (string, error) {
		t.Helper()
		ls, err := d.Lock(ctx, "a")
		require.NoError(t, err)
		defer ls.Close()
		st, found, err := ls.Load()
		if err == nil && !found {
			return "(none)", nil
		}
		return string(st), err
	}

	first := save(s, `{"id":"a","turn":1}`)
	got, err := load(s)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","turn":1}`, got)
	assert.Len(t, s.known, 1, "the file it wrote is known")

	// Another writer.
	save(other, `{"id":"a","turn":2}`)
	got, err = load(s)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","turn":2}`, got)

	// Rolled back to the first file, validly signed: what the file says,
	// never what this Dir wrote or read last.
	save(s, `{"id":"a","turn":3}`)
	require.NoError(t, os.WriteFile(s.Path("a"), first, 0o600))
	got, err = load(s)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","turn":1}`, got)

	// Edited: the state changed, the MAC not.
	data := save(s, `{"id":"a","turn":4}`)
	edited := []byte(string(data[:len(data)-3]) + `5}}`)
	require.NoError(t, os.WriteFile(s.Path("a"), edited, 0o600))
	_, err = load(s)
	var te *TamperedError
	require.ErrorAs(t, err, &te)
	// A MAC made with another key.
	var forged stateFile
	require.NoError(t, json.Unmarshal(data, &forged))
	forged.MAC = hex.EncodeToString(make([]byte, 32))
	fb, err := json.Marshal(forged)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Path("a"), fb, 0o600))
	_, err = load(s)
	require.ErrorAs(t, err, &te)
	// The known bytes again are known again.
	require.NoError(t, os.WriteFile(s.Path("a"), data, 0o600))
	got, err = load(s)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","turn":4}`, got)

	// Removed.
	ls, err := s.Lock(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, ls.Remove())
	require.NoError(t, ls.Close())
	assert.Empty(t, s.known)
	got, err = load(s)
	require.NoError(t, err)
	assert.Equal(t, "(none)", got)

	// A state json.Marshal rewrites is written in Marshal's form and
	// signed over it (its MAC used to be over the bytes as given, so the
	// file read as tampered): known, and loaded as written.
	save(s, `{"id":"a", "turn":6}`)
	assert.Len(t, s.known, 1)
	got, err = load(s)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","turn":6}`, got)
	got, err = load(&Dir{Dir: s.Dir})
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","turn":6}`, got)
}

// TestKnownBounded: the memory of known files stays within its bounds.
func TestKnownBounded(t *testing.T) {
	s := &Dir{Dir: t.TempDir()}
	big := make([]byte, maxKnownBytes/3)
	for i := range 10 {
		s.remember(string(rune('a'+i)), "a", big, nil)
		assert.LessOrEqual(t, s.knownBytes, maxKnownBytes)
	}
	s.remember("huge", "a", make([]byte, maxKnownBytes+1), nil)
	assert.LessOrEqual(t, s.knownBytes, maxKnownBytes)
	_, ok := s.knownState("huge", "a", make([]byte, maxKnownBytes+1))
	assert.False(t, ok)
	for i := range maxKnown + 10 {
		s.remember(string(rune(i)), "a", []byte("x"), nil)
		assert.LessOrEqual(t, len(s.known), maxKnown)
	}
}

// TestKnownIsTheSession: bytes remembered for one session are not
// known for another whose id names the same file (FileName keeps 64 bits
// of the id's hash): that one checks them in full, and its MAC, made for
// the first session, does not check.
func TestKnownIsTheSession(t *testing.T) {
	s := &Dir{Dir: t.TempDir()}
	s.remember("f", "a", []byte("data"), []byte("state"))
	st, ok := s.knownState("f", "a", []byte("data"))
	assert.True(t, ok)
	assert.Equal(t, "state", string(st))
	_, ok = s.knownState("f", "b", []byte("data"))
	assert.False(t, ok, "another session's bytes")
	_, ok = s.knownState("f", "a", []byte("datb"))
	assert.False(t, ok, "other bytes")
}
