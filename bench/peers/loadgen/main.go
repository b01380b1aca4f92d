// Command loadgen compares celguard serve with OPA's server under load, on
// loopback, on the peers benchmark's workload: the 20-rule policy
// (benchdata.Policy20, bench.rego in Rego) and its 1,000-call stream.
//
// Both servers run in this process, each on its own 127.0.0.1 port: celguard
// serve's handler (package serve, the code `celguard serve` runs) in a
// net/http server with state in memory, and OPA's runtime (the code `opa
// run --server` runs) with bench.rego. For each concurrency, that many
// workers send requests back to back for -duration, each over its own
// keep-alive connection; the answer's decision is checked against the
// in-process engine's, so that both servers do the same work. It prints
// throughput and p50/p99/max latency per target and concurrency:
//
//	celguard-api   POST /v1/sessions/wN/before (one session per worker)
//	celguard-hook  POST /v1/hooks/claude-code (Claude Code's PreToolUse)
//	opa            POST /v1/data/celguard/bench/decision
//
//	go run ./loadgen -duration 5s -c 1,4,16,64
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	flag.Parse()
	if err := run(*duration, *levels, strings.Split(*targets, ","), *storeURL); err != nil {
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

func run(duration time.Duration, levels string, names []string, storeURL string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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

	celURL, err := startCelguard(ctx, storeURL)
	if err != nil {
		return err
	}
	opaURL, err := startOPA(ctx)
	if err != nil {
		return err
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
		"celguard-api": {name: "celguard-api", url: celURL,
			path: func(w int) string { return "/v1/sessions/w" + strconv.Itoa(w) + "/before" },
			body: func(_, i int) []byte { return apiBodies[i] },
			verdict: func(b []byte) (string, error) {
				var d struct{ Verdict string }
				err := json.Unmarshal(b, &d)
				return d.Verdict, err
			}},
		"celguard-hook": {name: "celguard-hook", url: celURL,
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
		"opa": {name: "opa", url: opaURL,
			path: func(int) string { return "/v1/data/celguard/bench/decision" },
			body: func(_, i int) []byte { return opaBodies[i] },
			verdict: func(b []byte) (string, error) {
				var a struct{ Result []any }
				if err := json.Unmarshal(b, &a); err != nil || len(a.Result) != 4 {
					return "", fmt.Errorf("OPA answered %s", b)
				}
				v, _ := a.Result[3].(string)
				return v, nil
			}},
	}
	fmt.Printf("# loadgen: %d calls (benchdata.Stream), the 20-rule policy, celguard store %s, %s per run, GOMAXPROCS %d, %s\n",
		len(calls), store.Redact(storeURL), duration, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("%-14s %5s %10s %10s %10s %10s %8s\n", "target", "conc", "req/s", "p50", "p99", "max", "errors")
	for _, lv := range strings.Split(levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(lv))
		if err != nil || c <= 0 {
			return fmt.Errorf("-c: %q is not a positive number", lv)
		}
		for _, name := range names {
			t, ok := all[strings.TrimSpace(name)]
			if !ok {
				return fmt.Errorf("-targets: no target %q", name)
			}
			r := load(t, c, duration, want)
			fmt.Printf("%-14s %5d %10.0f %10s %10s %10s %8d\n", t.name, c, r.rate, r.p50, r.p99, r.max, r.errors)
			if r.firstErr != nil {
				fmt.Printf("#   first error: %v\n", r.firstErr)
			}
		}
	}
	return nil
}

// result is one run's figures.
type result struct {
	rate          float64
	p50, p99, max time.Duration
	errors        int
	firstErr      error
}

// load runs c workers against t for d.
func load(t target, c int, d time.Duration, want []string) result {
	tr := &http.Transport{MaxIdleConns: c, MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat []time.Duration
	var errs int
	var firstErr error
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
			url := t.url + t.path(w)
			for i := w * 97; time.Now().Before(deadline); i++ {
				k := i % len(want)
				t0 := time.Now()
				res, err := client.Post(url, "application/json", bytes.NewReader(t.body(w, k)))
				if err != nil {
					fail(err)
					continue
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				local = append(local, time.Since(t0))
				if err != nil || res.StatusCode != 200 {
					fail(fmt.Errorf("HTTP %d %v: %s", res.StatusCode, err, b))
					continue
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
	slices.Sort(lat)
	r := result{errors: errs, firstErr: firstErr}
	if n := len(lat); n > 0 {
		r.rate = float64(n) / elapsed.Seconds()
		r.p50, r.p99, r.max = lat[n/2], lat[min(n-1, n*99/100)], lat[n-1]
	}
	return r
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
