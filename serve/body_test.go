package serve

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/iotest"
)

// limitedReaders are the ways a body arrives in FuzzReadLimited: whole,
// a byte at a time, half of each read, with its last bytes and EOF
// together, with an error after its first read, or an error at once.
var limitedReaders = []func([]byte) io.Reader{
	func(b []byte) io.Reader { return bytes.NewReader(b) },
	func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
	func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
	func(b []byte) io.Reader { return iotest.TimeoutReader(bytes.NewReader(b)) },
	func(b []byte) io.Reader { return iotest.ErrReader(errBroken) },
}

// errBroken is the error of a body that cannot be read.
var errBroken = errors.New("broken")

// FuzzReadLimited holds readLimited to what it replaces,
// buf.ReadFrom(http.MaxBytesReader(w, r, limit)): the same bytes in the
// buffer (after what it held) and the same error, for any body, limit and
// way of arriving.
func FuzzReadLimited(f *testing.F) {
	f.Add([]byte(`{"tool":"Bash"}`), int64(1<<20), uint8(0), []byte(nil))
	f.Add([]byte(`{"tool":"Bash"}`), int64(15), uint8(1), []byte("x"))
	f.Add([]byte(`{"tool":"Bash"}`), int64(14), uint8(2), []byte(nil))
	f.Add(bytes.Repeat([]byte("a"), 3000), int64(2000), uint8(3), []byte("prefix"))
	f.Add(bytes.Repeat([]byte("a"), 600), int64(512), uint8(0), []byte(nil))
	f.Add([]byte(""), int64(0), uint8(4), []byte(nil))
	f.Add([]byte("a"), int64(0), uint8(3), []byte(nil))
	f.Add([]byte("abc"), int64(-1), uint8(5), []byte(nil))
	f.Fuzz(func(t *testing.T, body []byte, limit int64, how uint8, held []byte) {
		if limit > 1<<24 {
			limit %= 1 << 24 // a buffer that large is not what is tested
		}
		mk := limitedReaders[int(how)%len(limitedReaders)]
		var want bytes.Buffer
		want.Write(held)
		_, werr := want.ReadFrom(http.MaxBytesReader(nil, io.NopCloser(mk(body)), limit))
		var got bytes.Buffer
		got.Write(held)
		gerr := readLimited(&got, mk(body), limit)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("limit %d, reader %d: read %q, MaxBytesReader %q", limit, how, got.Bytes(), want.Bytes())
		}
		var gm, wm *http.MaxBytesError
		switch {
		case errors.As(werr, &wm):
			if !errors.As(gerr, &gm) || gm.Limit != wm.Limit {
				t.Fatalf("limit %d, reader %d: error %v, MaxBytesReader's %v", limit, how, gerr, werr)
			}
		case gerr != werr:
			t.Fatalf("limit %d, reader %d: error %v, MaxBytesReader's %v", limit, how, gerr, werr)
		}
	})
}

// TestReadLimitedRandom runs FuzzReadLimited's check over random bodies
// with limits around their length, every reader, with and without bytes
// already held.
func TestReadLimitedRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 4))
	for range 20000 {
		body := make([]byte, r.IntN(2000))
		for i := range body {
			body[i] = byte(r.IntN(256))
		}
		limit := int64(len(body) + r.IntN(7) - 3)
		if r.IntN(10) == 0 {
			limit = int64(r.IntN(3000))
		}
		var held []byte
		if r.IntN(2) == 0 {
			held = body[:r.IntN(len(body)+1)]
		}
		how := uint8(r.IntN(len(limitedReaders)))
		mk := limitedReaders[how]
		var want, got bytes.Buffer
		want.Write(held)
		got.Write(held)
		_, werr := want.ReadFrom(http.MaxBytesReader(nil, io.NopCloser(mk(body)), limit))
		gerr := readLimited(&got, mk(body), limit)
		var wm, gm *http.MaxBytesError
		if !bytes.Equal(got.Bytes(), want.Bytes()) || errors.As(werr, &wm) != errors.As(gerr, &gm) || wm == nil && gerr != werr || wm != nil && gm.Limit != wm.Limit {
			t.Fatalf("body %d bytes, limit %d, reader %d: %d bytes and %v, MaxBytesReader %d bytes and %v", len(body), limit, how, got.Len(), gerr, want.Len(), werr)
		}
	}
}
