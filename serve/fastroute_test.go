package serve

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// testMux is a ServeMux of the route table's patterns (and the catch-all)
// whose handlers record which pattern they are and their wildcard's value:
// the ServeMux's own answer to which route a request goes to, and with
// which value.
func testMux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routeTable {
		pattern := rt.Method + " " + rt.Path
		name := ""
		if i := strings.IndexByte(rt.Path, '{'); i >= 0 && strings.Count(rt.Path, "{") == 1 {
			name = strings.Trim(rt.Path[i:strings.IndexByte(rt.Path, '}')+1], "{}.")
		}
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Pattern", pattern)
			if name != "" {
				w.Header().Set("Value", r.PathValue(name))
			}
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Pattern", "/") })
	return mux
}

// checkFastRoute: when the fast routes take r, the ServeMux sends it to
// the same route with the same wildcard value, and does not redirect it.
func checkFastRoute(t *testing.T, rt *router, mux *http.ServeMux, r *http.Request) bool {
	t.Helper()
	f, v := rt.match(r)
	if f == nil {
		return false
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusOK || w.Header().Get("Pattern") != f.pattern || w.Header().Get("Value") != v {
		t.Fatalf("%s %s (raw path %q): fast route %q with %q, but the ServeMux answers %d, route %q with %q",
			r.Method, r.URL.Path, r.URL.RawPath, f.pattern, v, w.Code, w.Header().Get("Pattern"), w.Header().Get("Value"))
	}
	return true
}

// TestFastRoutesAgreeWithMux holds the decision routes' fast matching to
// the ServeMux on paths made of the routes' own segments, wildcard values
// plain and not (escapes, dots, empty, slashes), every method, and on
// random paths; and checks that the fast routes are the decision routes
// and take their ordinary requests.
func TestFastRoutesAgreeWithMux(t *testing.T) {
	s := &Server{}
	rt := &router{fast: s.fastRoutes(routeTable)}
	var names []string
	for _, f := range rt.fast {
		names = append(names, f.pattern)
	}
	want := "POST /v1/sessions/{id}/turns/start POST /v1/sessions/{id}/turns/end POST /v1/sessions/{id}/before POST /v1/sessions/{id}/after POST /v1/sessions/{id}/input POST /v1/sessions/{id}/output POST /v1/hooks/{host}"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("fast routes %s, want %s", got, want)
	}
	mux := testMux()
	values := []string{"s", "w0", "claude-code", "a.b", "A-Z_0~9:x@y", "...", ".", "..", "", "a%2Fb", "a%20b", "a b", "%41", "a%2", "é", "a/b", "a//b", "a/../b", "{id}", "before", "x?y=1", "x#f"}
	methods := []string{"POST", "GET", "HEAD", "PUT", "DELETE", "post"}
	taken := 0
	for _, f := range rt.fast {
		for _, v := range values {
			for _, m := range methods {
				for _, tail := range []string{"", "/", "/x", "?form=command"} {
					target := f.prefix + v + f.suffix + tail
					r, err := http.NewRequest(m, "http://127.0.0.1"+target, nil)
					if err != nil {
						continue
					}
					if checkFastRoute(t, rt, mux, r) {
						taken++
					}
				}
			}
		}
		// Its ordinary request is taken.
		r := httptest.NewRequest(f.method, f.prefix+"w0"+f.suffix, nil)
		if g, _ := rt.match(r); g != &f && (g == nil || g.pattern != f.pattern) {
			t.Errorf("%s: a plain request is not taken", f.pattern)
		}
	}
	if taken == 0 {
		t.Fatal("no request taken")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	segs := []string{"v1", "sessions", "hooks", "turns", "start", "end", "before", "after", "input", "output", "approvals", "denials", "halt", "w0", "claude-code", ".", "..", "", "%2F", "a%2e", "x"}
	for range 50_000 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString("/" + segs[rng.IntN(len(segs))])
		}
		r, err := http.NewRequest(methods[rng.IntN(len(methods))], "http://127.0.0.1"+b.String(), nil)
		if err != nil {
			continue
		}
		checkFastRoute(t, rt, mux, r)
	}
}

// FuzzFastRoutes: on any request line's target, the fast routes agree with
// the ServeMux.
func FuzzFastRoutes(f *testing.F) {
	s := &Server{}
	rt := &router{fast: s.fastRoutes(routeTable)}
	mux := testMux()
	f.Add("POST", "/v1/sessions/w0/before")
	f.Add("POST", "/v1/hooks/claude-code")
	f.Add("POST", "/v1/sessions/a%2Fb/turns/end")
	f.Add("GET", "/v1/sessions/./before")
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://127.0.0.1"+target, nil)
		if err != nil || r.URL.Host != "127.0.0.1" || !strings.HasPrefix(r.URL.Path, "/") {
			return
		}
		checkFastRoute(t, rt, mux, r)
	})
}
