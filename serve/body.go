package serve

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// readLimited appends what r reads to buf, at most limit bytes: it reads
// exactly what buf.ReadFrom(http.MaxBytesReader(w, r, limit)) reads, and
// returns the same error (a *http.MaxBytesError when r has more than limit
// bytes, with buf holding the first limit), without the reader's
// allocation. (MaxBytesReader's other effect, asking net/http to close the
// connection, does not reach the connection through observe's
// statusWriter; net/http closes it anyway when the handler leaves more
// than 256 KiB of the body unread.)
func readLimited(buf *bytes.Buffer, r io.Reader, limit int64) error {
	limit = max(limit, 0) // as MaxBytesReader
	for read := int64(0); ; {
		buf.Grow(bytes.MinRead)
		p := buf.AvailableBuffer()
		p = p[:cap(p)]
		// One byte past the limit tells whether r has more, as
		// MaxBytesReader reads.
		if rest := limit + 1 - read; int64(len(p)) > rest {
			p = p[:rest]
		}
		n, err := r.Read(p)
		if n < 0 || n > len(p) {
			panic("serve: a reader returned an impossible count") // as bytes.Buffer.ReadFrom
		}
		if read+int64(n) > limit {
			buf.Write(p[:limit-read])
			return &http.MaxBytesError{Limit: limit}
		}
		read += int64(n)
		buf.Write(p[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// tooLarge says whether err is, or wraps, a *http.MaxBytesError
// (readLimited's), without errors.As's allocation when err is nil.
func tooLarge(err error) bool {
	if err == nil {
		return false
	}
	var m *http.MaxBytesError
	return errors.As(err, &m)
}
