// Command loadgen compares celguard serve with OPA's server under load, on
// loopback, on the peers benchmark's workload: the 20-rule policy
// (benchdata.Policy20, bench.rego in Rego) and its 1,000-call stream.
//
// Each target's server runs in a process of its own (this binary, run
// again with -serve), on its own 127.0.0.1 port: celguard serve's handler
// (package serve, the code `celguard serve` runs) in a net/http server with
// state in memory, and OPA's runtime (the code `opa run --server` runs)
// with bench.rego. This process is the generator only: for each
// concurrency, that many workers send requests back to back for -duration,
// each over its own keep-alive connection; the answer's decision is
// checked against the in-process engine's, so that both servers do the
// same work. With -pin, every server process runs on the last CPU alone
// (its GOMAXPROCS is then 1) and the generator on the other CPUs
// (sched_setaffinity), so that the generator's work is not taken from the
// server it measures; both peers get the same settings. It prints
// throughput, p50/p99/max latency, and the server's and the generator's
// CPU time per request, per target and concurrency:
//
//	celguard-api   POST /v1/sessions/wN/before (one session per worker)
//	celguard-hook  POST /v1/hooks/claude-code (Claude Code's PreToolUse)
//	opa            POST /v1/data/celguard/bench/decision
//
// Two more targets, not in the default list, calibrate the account of a
// request (BENCHMARKS.md): what the generator and the transport cost
// without any decision. Both answer every request with the same fixed
// allow, read the whole body first, and are not checked against the
// engine (they decide nothing):
//
//	raw            a TCP server that parses the request by hand (the
//	               generator's own cost, with loopback's syscalls)
//	null           net/http's server with a handler that reads the body
//	               and writes the fixed answer (net/http's floor)
//
//	go run ./loadgen -duration 5s -c 1,4,16,64
//	go run ./loadgen -duration 5s -c 1,4,16 -pin
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	opart "github.com/open-policy-agent/opa/v1/runtime"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/bench/peers"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/store"
)

func main() {
	duration := flag.Duration("duration", 5*time.Second, "how long each target runs at each concurrency")
	levels := flag.String("c", "1,4,16,64", "the concurrencies, comma-separated")
	targets := flag.String("targets", "celguard-api,celguard-hook,opa", "the targets, comma-separated")
	storeURL := flag.String("store", "memory:", `celguard's state store, as celguard serve --store takes it (memory:, redis://HOST:PORT/DB), or "none" for sessions without a store`)
	requests := flag.Int("requests", 0, "when positive, each worker sends this many requests per run, whatever -duration says (for counting instructions: valgrind --tool=callgrind)")
	clientKind := flag.String("client", "lean", `the generator's HTTP client: "lean" (a connection per worker, written from reused bytes and its answer read in place in the worker's goroutine) or "net/http" (net/http's Client and Transport)`)
	pin := flag.Bool("pin", false, "run every server on the last CPU alone and the generator on the others (sched_setaffinity); needs 2 CPUs or more")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the generator to this file, and of each target's server to this file with .TARGET appended")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the generator to this file at the end, and of each target's server to this file with .TARGET appended")
	serveKind := flag.String("serve", "", "internal: run as the server process of this kind (celguard, opa, raw, null) until stdin closes")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	var err error
	if *serveKind != "" {
		err = serveChild(*serveKind, *storeURL)
	} else {
		err = run(*duration, *levels, strings.Split(*targets, ","), *storeURL, *clientKind, *requests, *pin, *cpuProfile, *memProfile)
	}
	if err == nil && *memProfile != "" {
		var f *os.File
		if f, err = os.Create(*memProfile); err == nil {
			err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// target is one server and how to ask it about a call.
type target struct {
	name string
	url  string
	// body is the request for call i of worker w.
	body func(w, i int) []byte
	path func(w int) string
	// verdict reads the decision's verdict from an answer.
	verdict func([]byte) (string, error)
}

func run(duration time.Duration, levels string, names []string, storeURL, clientKind string, requests int, pin bool, cpuProfile, memProfile string) error {
	if clientKind != "lean" && clientKind != "net/http" {
		return fmt.Errorf(`-client: %q is neither "lean" nor "net/http"`, clientKind)
	}
	calls := benchdata.Stream(1000)
	ref, err := peers.NewCelguard()
	if err != nil {
		return err
	}
	want := make([]string, len(calls))
	for i, c := range calls {
		v, _ := ref.Decide(c)
		if v == "ask" {
			v = "allow" // the servers below approve asks, as the peers benchmark does
		}
		want[i] = v
	}

	// The CPUs: with -pin, the servers get the last one and the
	// generator the others.
	var srvCPUs, genCPUs *cpuSet
	if pin {
		all, err := affinity(0)
		if err != nil {
			return fmt.Errorf("-pin: %w", err)
		}
		cpus := all.list()
		if len(cpus) < 2 {
			return fmt.Errorf("-pin: %d CPU available, 2 needed", len(cpus))
		}
		srvCPUs, genCPUs = newCPUSet(cpus[len(cpus)-1:]), newCPUSet(cpus[:len(cpus)-1])
	}

	maxC := 0
	for _, lv := range strings.Split(levels, ",") {
		if c, err := strconv.Atoi(strings.TrimSpace(lv)); err == nil {
			maxC = max(maxC, c)
		}
	}
	apiBodies := make([][]byte, len(calls))
	opaBodies := make([][]byte, len(calls))
	// One Claude Code session per worker, as one per agent.
	hookBodies := make([][][]byte, maxC)
	for i, c := range calls {
		apiBodies[i], _ = json.Marshal(c)
		opaBodies[i], _ = json.Marshal(map[string]any{"input": map[string]any{"tool": c.Tool, "args": c.Args, "cwd": c.Cwd}})
	}
	for w := range maxC {
		hookBodies[w] = make([][]byte, len(calls))
		for i, c := range calls {
			hookBodies[w][i], _ = json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "hook" + strconv.Itoa(w),
				"cwd": c.Cwd, "tool_name": c.Tool, "tool_input": c.Args})
		}
	}
	all := map[string]target{
		"raw":  {name: "raw", path: func(int) string { return "/" }, body: func(_, i int) []byte { return apiBodies[i] }},
		"null": {name: "null", path: func(int) string { return "/" }, body: func(_, i int) []byte { return apiBodies[i] }},
		"celguard-api": {name: "celguard-api",
			path:    func(w int) string { return "/v1/sessions/w" + strconv.Itoa(w) + "/before" },
			body:    func(_, i int) []byte { return apiBodies[i] },
			verdict: apiVerdict},
		"celguard-hook": {name: "celguard-hook",
			path: func(int) string { return "/v1/hooks/claude-code" },
			body: func(w, i int) []byte { return hookBodies[w][i] },
			verdict: func(b []byte) (string, error) {
				var a struct {
					HookSpecificOutput struct{ PermissionDecision string }
				}
				if err := json.Unmarshal(b, &a); err != nil {
					return "", err
				}
				if a.HookSpecificOutput.PermissionDecision == "deny" {
					return "block", nil
				}
				return "allow", nil
			}},
		"opa": {name: "opa",
			path:    func(int) string { return "/v1/data/celguard/bench/decision" },
			body:    func(_, i int) []byte { return opaBodies[i] },
			verdict: opaVerdict},
	}
	// One server process per target, started once the generator is
	// ready and before any target is measured.
	servers := map[string]*server{}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range names {
		name = strings.TrimSpace(name)
		kind, ok := serverKind[name]
		if !ok {
			return fmt.Errorf("-targets: no target %q", name)
		}
		if servers[name] != nil {
			continue
		}
		args := []string{"-serve", kind, "-store", storeURL}
		if cpuProfile != "" {
			args = append(args, "-cpuprofile", cpuProfile+"."+name)
		}
		if memProfile != "" {
			args = append(args, "-memprofile", memProfile+"."+name)
		}
		srv, err := spawn(args, srvCPUs)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		servers[name] = srv
	}
	genProcs := runtime.GOMAXPROCS(0)
	if genCPUs != nil {
		if err := pinProcess(genCPUs); err != nil {
			return fmt.Errorf("-pin: %w", err)
		}
		genProcs = len(genCPUs.list())
		runtime.GOMAXPROCS(genProcs)
	}

	placement := fmt.Sprintf("unpinned: servers and generator on any CPU, server GOMAXPROCS %d, generator GOMAXPROCS %d", firstServer(servers).procs, genProcs)
	if pin {
		placement = fmt.Sprintf("pinned: servers on CPU %v (GOMAXPROCS %d), generator on CPU %v (GOMAXPROCS %d)",
			srvCPUs.list(), firstServer(servers).procs, genCPUs.list(), genProcs)
	}
	fmt.Printf("# loadgen: %d calls (benchdata.Stream), the 20-rule policy, celguard store %s, %s per run, client %s, one server process per target; %s; %s\n",
		len(calls), store.Redact(storeURL), duration, clientKind, placement, time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("%-14s %5s %10s %10s %10s %10s %10s %10s %10s %8s %9s\n", "target", "conc", "req/s", "p50", "p99", "max", "srv-cpu/req", "gen-cpu/req", "srv-wait/req", "errors", "srv-rss")
	for _, lv := range strings.Split(levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(lv))
		if err != nil || c <= 0 {
			return fmt.Errorf("-c: %q is not a positive number", lv)
		}
		got := map[string]result{}
		for _, name := range names {
			name = strings.TrimSpace(name)
			t := all[name]
			t.url = servers[name].url
			r := load(t, servers[name].pid, c, duration, want, clientKind, requests)
			got[t.name] = r
			fmt.Printf("%-14s %5d %10.0f %10s %10s %10s %10s %10s %10.2f %8d %7.1fMB\n", t.name, c, r.rate, r.p50, r.p99, r.max, r.srvCPU, r.genCPU, r.srvWaits, r.errors, float64(r.srvRSS)/(1<<20))
			if r.firstErr != nil {
				fmt.Printf("#   first error: %v\n", r.firstErr)
			}
		}
		compare(c, names, got)
	}
	return nil
}

// serverKind is the server process each target asks.
var serverKind = map[string]string{
	"raw": "raw", "null": "null", "celguard-api": "celguard", "celguard-hook": "celguard", "opa": "opa",
}

// firstServer is any of servers (they all run with the same placement).
func firstServer(servers map[string]*server) *server {
	for _, s := range servers {
		return s
	}
	return &server{}
}

// result is one run's figures.
type result struct {
	rate          float64
	p50, p99, max time.Duration
	// srvCPU and genCPU are the server process's and the generator's
	// CPU time (user and system) per request: steadier than wall time on
	// a loaded machine, where throughput and latency measure the queue.
	srvCPU, genCPU time.Duration
	// srvWaits is the server's voluntary context switches per request
	// (procSwitches): how often its threads slept and were woken.
	srvWaits float64
	// srvRSS is the server process's resident memory at the end of the
	// run, in bytes (procRSS; 0 where unknown).
	srvRSS   int64
	errors   int
	firstErr error
}

// load runs c workers against t, whose server is process pid, for d.
func load(t target, pid, c int, d time.Duration, want []string, clientKind string, requests int) result {
	tr := &http.Transport{MaxIdleConns: c, MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat []time.Duration
	var errs int
	var firstErr error
	gen0, srv0, waits0 := cpuTime(), procCPU(pid), procSwitches(pid)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1<<16)
			nerr := 0
			var ferr error
			fail := func(err error) {
				nerr++
				if ferr == nil {
					ferr = err
				}
			}
			var post poster = &netHTTP{client: client, url: t.url}
			if clientKind == "lean" {
				lc := &leanConn{addr: strings.TrimPrefix(t.url, "http://")}
				defer lc.close()
				post = lc
			}
			path := t.path(w)
			for i := w * 97; requests > 0 && i < w*97+requests || requests <= 0 && time.Now().Before(deadline); i++ {
				k := i % len(want)
				t0 := time.Now()
				status, b, err := post.post(path, t.body(w, k))
				local = append(local, time.Since(t0))
				if err != nil || status != 200 {
					fail(fmt.Errorf("HTTP %d %v: %s", status, err, b))
					continue
				}
				if t.verdict == nil {
					continue // a calibration target: it decides nothing
				}
				v, err := t.verdict(b)
				if err != nil {
					fail(err)
				} else if norm(v) != norm(want[k]) {
					fail(fmt.Errorf("call %d: %s answered %s, the engine %s", k, t.name, v, want[k]))
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			errs += nerr
			if firstErr == nil {
				firstErr = ferr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	gen, srv, waits := cpuTime()-gen0, procCPU(pid)-srv0, procSwitches(pid)-waits0
	slices.Sort(lat)
	r := result{errors: errs, firstErr: firstErr, srvRSS: procRSS(pid)}
	if n := len(lat); n > 0 {
		r.rate = float64(n) / elapsed.Seconds()
		r.p50, r.p99, r.max = lat[n/2], lat[min(n-1, n*99/100)], lat[n-1]
		r.srvCPU, r.genCPU = srv/time.Duration(n), gen/time.Duration(n)
		r.srvWaits = float64(waits) / float64(n)
	}
	return r
}

// poster sends one POST with a JSON body over a keep-alive connection and
// returns the answer's status and body (valid until the next post).
type poster interface {
	post(path string, body []byte) (int, []byte, error)
}

// netHTTP posts with net/http's client (a Transport per load, a
// connection per worker): two goroutines per connection, a request and a
// response built per call.
type netHTTP struct {
	client *http.Client
	url    string
}

func (c *netHTTP) post(path string, body []byte) (int, []byte, error) {
	res, err := c.client.Post(c.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, b, err
}

// leanConn posts over one TCP connection of its own: the request written
// in one write from reused bytes, the answer read by readResponse into a
// reused buffer in the worker's goroutine, with no allocation per request.
// It sends what net/http's client sends for the same call, less its
// User-Agent and Accept-Encoding headers, and costs the generator a
// fraction of the client's CPU time, which on a small machine is taken
// from the servers it measures.
type leanConn struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	req  []byte
	resp []byte
}

func (c *leanConn) post(path string, body []byte) (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	c.req = append(c.req[:0], "POST "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.addr...)
	c.req = append(c.req, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	c.req = strconv.AppendInt(c.req, int64(len(body)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, body...)
	if _, err := c.conn.Write(c.req); err != nil {
		c.close()
		return 0, nil, err
	}
	status, b, keep, err := readResponse(c.br, c.resp)
	c.resp = b
	if err != nil || !keep {
		c.close()
	}
	return status, b, err
}

func (c *leanConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// errResponse is readResponse's refusal of an answer it does not read.
var errResponse = errors.New("loadgen: an answer the lean client does not read (not HTTP/1.1 with a Content-Length)")

// readResponse reads one HTTP/1.1 response from br: the status line,
// the header and a body of Content-Length bytes, into buf's memory
// (grown when too small). keep is false when the server asked to close
// the connection. It reads only the answers both servers write (HTTP/1.1,
// a 3-digit status, a Content-Length, no Transfer-Encoding, names of
// token characters); any other answer is an error, never another body
// than net/http's parser would read (TestReadResponseAgreesWithNetHTTP,
// FuzzReadResponse).
func readResponse(br *bufio.Reader, buf []byte) (status int, body []byte, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, buf, false, err
	}
	// "HTTP/1.1 200 OK\r\n" or "HTTP/1.1 200\r\n"
	if len(line) < 14 || string(line[:9]) != "HTTP/1.1 " || line[len(line)-2] != '\r' || line[12] != ' ' && len(line) != 14 {
		return 0, buf, false, errResponse
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return 0, buf, false, errResponse
		}
		status = status*10 + int(d-'0')
	}
	if status < 200 || status == 204 || status == 304 {
		return 0, buf, false, errResponse // no body by definition, or an interim answer
	}
	n, keep := -1, true
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, buf, false, err
		}
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return 0, buf, false, errResponse
		}
		line = line[:len(line)-2]
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || !token(name) || !fieldValue(value) {
			return 0, buf, false, errResponse
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n >= 0 || len(value) == 0 || len(value) > 9 {
				return 0, buf, false, errResponse
			}
			n = 0
			for _, d := range value {
				if d < '0' || d > '9' {
					return 0, buf, false, errResponse
				}
				n = n*10 + int(d-'0')
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")), bytes.EqualFold(name, []byte("Trailer")):
			return 0, buf, false, errResponse
		case bytes.EqualFold(name, []byte("Connection")):
			for _, f := range bytes.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
				if bytes.EqualFold(f, []byte("close")) {
					keep = false
				}
			}
		}
	}
	if n < 0 {
		return 0, buf, false, errResponse
	}
	if cap(buf) < n {
		buf = make([]byte, n, max(n, 2*cap(buf)))
	}
	buf = buf[:n]
	if _, err := io.ReadFull(br, buf); err != nil {
		return 0, buf[:0], false, err
	}
	return status, buf, keep, nil
}

// fieldValue reports whether b holds no control character but tab.
func fieldValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// token reports whether b is made of HTTP token characters (RFC 9110).
func token(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// norm maps verdicts to what a hook answer can tell apart: refused or not.
func norm(v string) string {
	switch v {
	case "block", "halt", "deny":
		return "refused"
	}
	return "let through"
}

// approveAll approves every ask, as the peers benchmark's engine does.
var approveAll = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Approve}, nil
})

// startCelguard serves the 20-rule policy with serve's handler on a free
// loopback port, with the state store storeURL names as celguard serve
// opens it ("none": no store), and returns its URL.
func startCelguard(ctx context.Context, storeURL string) (string, error) {
	ecfg := celguard.Config{
		Sources:  func() ([]policy.Source, error) { return []policy.Source{benchdata.Source20()}, nil },
		Approver: approveAll,
	}
	if storeURL != "none" {
		st, err := store.Open(ctx, storeURL)
		if err != nil {
			return "", err
		}
		ecfg.Store = st
	}
	srv, err := serve.New(serve.Config{Engine: ecfg, Version: "loadgen"})
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = (&http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}).Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// startOPA runs OPA's server (its runtime, as `opa run --server` does) with
// bench.rego on a free loopback port, logging errors only, and returns its
// URL once it listens.
func startOPA(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "loadgen-opa-")
	if err != nil {
		return "", err
	}
	rego := filepath.Join(dir, "bench.rego")
	if err := os.WriteFile(rego, []byte(peers.RegoPolicy), 0o644); err != nil {
		return "", err
	}
	params := opart.NewParams()
	params.Addrs = &[]string{"127.0.0.1:0"}
	params.Paths = []string{rego}
	params.Logging = opart.LoggingConfig{Level: "error"}
	params.Output = io.Discard
	rt, err := opart.NewRuntime(ctx, params)
	if err != nil {
		return "", err
	}
	errc := make(chan error, 1)
	go func() { errc <- rt.Serve(ctx) }()
	for range 600 {
		select {
		case err := <-errc:
			return "", fmt.Errorf("OPA: %v", err)
		default:
		}
		if a := rt.Addrs(); len(a) > 0 {
			return "http://" + a[0], nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", fmt.Errorf("OPA did not listen within a minute")
}

// fixedAnswer is the answer of the calibration targets raw and null.
const fixedAnswer = `{"verdict":"allow"}` + "\n"

// startNull serves fixedAnswer with net/http's server: the handler reads
// the whole body and writes the answer, as a handler that decided nothing
// would. It measures net/http's server with no decision.
func startNull() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header()["Content-Type"] = []string{"application/json"}
		_, _ = io.WriteString(w, fixedAnswer)
	})
	go func() { _ = (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// startRaw serves fixedAnswer over TCP with no HTTP library: a goroutine
// per connection reads the request line and headers up to the blank line,
// the Content-Length bytes of the body, and writes a fixed response. It
// measures the generator and loopback's system calls with (almost) no
// server.
func startRaw() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(fixedAnswer)) + "\r\n\r\n" + fixedAnswer)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReaderSize(conn, 16<<10)
				for {
					n := -1
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if k, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
							n, _ = strconv.Atoi(string(bytes.TrimSpace(k)))
						}
					}
					if n < 0 {
						return
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := conn.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// compare prints, as comment lines after the table, each celguard
// target's throughput, p99 and CPU per request as ratios to OPA's at
// concurrency c, and whether issue 26's target holds there: at least 3x
// OPA's requests per second at a p99 no higher than OPA's.
func compare(c int, names []string, got map[string]result) {
	opa, ok := got["opa"]
	if !ok || opa.rate == 0 || opa.p99 == 0 || opa.srvCPU == 0 {
		return
	}
	for _, name := range names {
		r, ok := got[strings.TrimSpace(name)]
		if !ok || !strings.HasPrefix(strings.TrimSpace(name), "celguard-") {
			continue
		}
		met := "no"
		if r.rate >= 3*opa.rate && r.p99 <= opa.p99 && r.errors == 0 && opa.errors == 0 {
			met = "yes"
		}
		cpu := "-"
		if r.srvCPU > 0 {
			cpu = fmt.Sprintf("%.2fx", float64(opa.srvCPU)/float64(r.srvCPU))
		}
		fmt.Printf("# vs opa, c=%d, %s: req/s %.2fx, p99 %.2fx, server cpu/req %s OPA's; at least 3x with a p99 no higher: %s\n",
			c, strings.TrimSpace(name), r.rate/opa.rate, float64(r.p99)/float64(opa.p99), cpu, met)
	}
}

// The answers' verdicts. Both servers' answers are read the cheapest
// exact way their layout allows, so that the generator, which shares the
// machine with the server it measures, costs little and the same for
// both: a verdict is read in place when the answer has the layout the
// server writes (celguard's answer opens with its "verdict" member, OPA's
// closes with the verdict string, the last element of "result"), with no
// escape inside it, and the answer is valid JSON (json.Valid: a scan,
// without decoding); any other answer is decoded whole with encoding/json,
// as before. Both ways read the same verdict from any answer without a
// duplicate member (TestVerdictReaders).

// apiVerdict reads the verdict of celguard's session API answer.
func apiVerdict(b []byte) (string, error) {
	const open = `{"verdict":"`
	if rest, ok := bytes.CutPrefix(b, []byte(open)); ok && json.Valid(b) {
		if end := bytes.IndexByte(rest, '"'); end > 0 && plainWord(rest[:end]) {
			return string(rest[:end]), nil
		}
	}
	var d struct{ Verdict string }
	err := json.Unmarshal(b, &d)
	return d.Verdict, err
}

// opaVerdict reads the verdict of OPA's answer, the fourth element of its
// "result" array: [priority, rule count, rule id, verdict].
func opaVerdict(b []byte) (string, error) {
	if v, ok := opaInPlace(bytes.TrimRight(b, " \r\n")); ok && json.Valid(b) {
		return v, nil
	}
	var a struct{ Result []any }
	if err := json.Unmarshal(b, &a); err != nil || len(a.Result) != 4 {
		return "", fmt.Errorf("OPA answered %s", b)
	}
	v, _ := a.Result[3].(string)
	return v, nil
}

// opaInPlace reads an answer {"result":[INT,INT,"ID","VERDICT"]} with no
// space, no escape in ID and VERDICT a plain word; ok is false for any
// other answer.
func opaInPlace(t []byte) (string, bool) {
	t, ok := bytes.CutPrefix(t, []byte(`{"result":[`))
	if !ok {
		return "", false
	}
	for range 2 {
		i := bytes.IndexByte(t, ',')
		if i < 0 {
			return "", false
		}
		if _, err := strconv.ParseInt(string(t[:i]), 10, 64); err != nil {
			return "", false
		}
		t = t[i+1:]
	}
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	j := bytes.IndexByte(t[1:], '"')
	if j < 0 || bytes.IndexByte(t[1:1+j], '\\') >= 0 {
		return "", false
	}
	if t, ok = bytes.CutPrefix(t[j+2:], []byte(`,"`)); !ok {
		return "", false
	}
	k := bytes.IndexByte(t, '"')
	if k < 0 || !plainWord(t[:k]) || string(t[k+1:]) != "]}" {
		return "", false
	}
	return string(t[:k]), true
}

// plainWord reports whether b is a verdict's spelling: one or more ASCII
// letters, nothing JSON would escape.
func plainWord(b []byte) bool {
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return len(b) > 0
}
