package serve

import (
	"net/http"
	"testing"
	"time"
)

// TestHTTPDate: the Date header is net/http's own for any instant, in any
// location, at second boundaries and when seconds alternate (the cache
// replaced each time).
func TestHTTPDate(t *testing.T) {
	base := time.Date(2026, 11, 27, 23, 59, 59, 999_999_999, time.FixedZone("X", -7*3600))
	for i, at := range []time.Time{
		base, base.Add(time.Nanosecond), base, base.Add(time.Second), base.Add(time.Second + 1),
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0), time.Unix(-1, 0), time.Now(), time.Now().Add(-time.Hour),
	} {
		for range 2 { // formatted, then cached
			if got, want := httpDate(at), at.UTC().Format(http.TimeFormat); len(got) != 1 || got[0] != want {
				t.Fatalf("%d: httpDate(%v) = %q, want %q", i, at, got, want)
			}
		}
	}
}
