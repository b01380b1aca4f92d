package serve_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/celguard/celguard/internal/browsertest"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
)

// updateScreenshots writes the console's screenshots for the docs
// (docs/console/*.png).
var updateScreenshots = flag.Bool("update-screenshots", false, "write the console's screenshots to docs/console/")

// ScreenshotsEnv names the directory the browser test writes its
// screenshots to (a test artefact); t.TempDir() when unset.
const screenshotsEnv = "CELGUARD_CONSOLE_SCREENSHOTS"

// consolePolicy is the policy of the browser test: an ask before a push,
// a block of rm, a rule that never fires, and the admin layer's mandatory
// ask.
const consolePolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: team
description: the team's rules
rules:
  - id: confirm-push
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("git push")'
    verdict: ask
    reason: pushing publishes the branch; a person confirms it
  - id: no-rm
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("rm ")'
    verdict: block
    reason: deleting files is refused; ask the user to do it
  - id: bash-ok
    match: {tools: [Bash]}
    verdict: allow
  - id: bash-never
    match: {tools: [Bash]}
    condition: 'has(args.command) && args.command == "sudo -i"'
    verdict: block
    reason: shadowed by bash-ok
`

// playPolicy has an error on line 6: an unknown identifier.
const playPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: play
rules:
  - id: broken
    condition: 'tool == "Bash" && argz.command == "ls"'
    verdict: block
`

// tab drives one browser tab against the server under test.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func evalIn[T any](b *tab, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// eventually polls js until it is true, at most within deadline, and
// returns how long it took.
func (b *tab) eventually(js string, deadline time.Duration) time.Duration {
	b.t.Helper()
	start := time.Now()
	for {
		if evalIn[bool](b, js) {
			return time.Since(start)
		}
		if time.Since(start) > deadline {
			b.t.Fatalf("not within %s: %s", deadline, js)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// load navigates to path and checks what every page must: each control has
// a label.
func (b *tab) load(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base+path), chromedp.WaitReady(chromedp.CSS("body")))
	b.labelled()
}

// labelled fails the test for a control without a label: a form field
// without a <label> or aria-label, a button or link without text.
func (b *tab) labelled() {
	b.t.Helper()
	missing := evalIn[[]string](b, `Array.from(document.querySelectorAll("input:not([type=hidden]), select, textarea, button, a[href]")).filter(function (el) {
		if (el.tagName === "BUTTON" || el.tagName === "A") { return !(el.textContent.trim() || el.getAttribute("aria-label")); }
		return !((el.labels && el.labels.length) || el.getAttribute("aria-label"));
	}).map(function (el) { return el.outerHTML.slice(0, 120); })`)
	if len(missing) > 0 {
		b.t.Errorf("%s: controls without a label: %v", evalIn[string](b, "location.pathname"), missing)
	}
}

// shot writes a screenshot of the page as name.png to the artefact
// directory, and to docs/console/ with -update-screenshots.
func (b *tab) shot(name string) {
	b.t.Helper()
	// A page still loading (a form just posted) has no layout to capture.
	b.eventually(`document.readyState === "complete" && document.body.getBoundingClientRect().width > 0`, 10*time.Second)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	if *updateScreenshots {
		if err := os.WriteFile(filepath.Join("..", "docs", "console", name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// TestConsoleInBrowser drives the console in a real, headless Chromium:
// the login by keyboard; an agent's ask in the inbox within a second; an
// approval given once lets exactly that call through, and the next
// identical call is asked again; a denial keeps the call refused, and the
// same request answered again from another tab is refused; the decisions
// page shows a block by its rule; the playground shows a lint error at
// its line and shares the policy by a link; the policy page marks the
// mandatory and the shadowed rules. Every control has a label. It writes
// a screenshot of each page.
func TestConsoleInBrowser(t *testing.T) {
	version, err := browsertest.Version()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("browser: %s", version)
	f := newFixture(t, func(c *serve.Config) { c.Token, c.OperatorToken = decisionToken, approverToken })
	f.srcs = []policy.Source{policies.ToolClasses(), source("team.yaml", consolePolicy),
		{Name: "admin.yaml", Data: []byte(mandatoryAsk), Layer: policy.LayerAdmin}}
	if _, err := f.srv.Reload(true); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	br := browsertest.Start(t)
	ctx, cancel := context.WithTimeout(br.Context(), 3*time.Minute)
	defer cancel()
	b := &tab{t: t, ctx: ctx, base: f.url, dir: dir}

	// Log in with the keyboard alone: type, Tab to the next field, Enter.
	b.load("/ui/")
	if evalIn[string](b, "location.pathname") != "/ui/login" {
		t.Fatal("the console without a session is not the login page")
	}
	b.shot("login")
	b.do(chromedp.Focus(chromedp.ID("name")), chromedp.KeyEvent("Ana Operator\t"))
	if id := evalIn[string](b, "document.activeElement.id"); id != "token" {
		t.Fatalf("Tab from the name went to %q, not the token field", id)
	}
	b.do(chromedp.KeyEvent(approverToken + "\r"))
	b.eventually(`location.pathname === "/ui/" && !!document.getElementById("inbox")`, 10*time.Second)
	b.labelled()
	// The script has connected its event stream once the first event came.
	f.before("warmup", "ls")

	// 1. An agent's ask appears in the inbox within a second.
	req := requestOf(t, f.before("s1", "git push origin main"))
	took := b.eventually(fmt.Sprintf(`!!document.querySelector('[data-request=%q]')`, req), time.Second)
	t.Logf("the ask appeared in the inbox after %s", took)
	text := evalIn[string](b, fmt.Sprintf(`document.getElementById("req-%s").innerText`, req))
	for _, want := range []string{"confirm-push", "team.yaml:6", "a person confirms it", "git push origin main", "s1", "/srv/app"} {
		if !strings.Contains(text, want) {
			t.Errorf("the request shows no %q:\n%s", want, text)
		}
	}
	b.labelled()
	b.shot("inbox")

	// 2. Approve once, by keyboard: the note, Tab to "Approve once", Enter.
	b.do(chromedp.Focus(chromedp.ID("note-"+req)), chromedp.KeyEvent("checked the branch\t"))
	if v := evalIn[string](b, "document.activeElement.value"); v != "once" {
		t.Fatalf("Tab from the note went to %q, not Approve once", v)
	}
	b.do(chromedp.KeyEvent("\r"))
	b.eventually(`!!document.querySelector(".flash") && document.querySelector(".flash").textContent.includes("Approved once")`, 10*time.Second)
	if d := f.before("s1", "git push origin main"); d["verdict"] != "allow" {
		t.Fatalf("the call approved once: %v, want allow", d)
	}
	if d := f.before("s1", "git push origin other"); d["verdict"] != "ask" {
		t.Fatalf("another call after approve-once: %v, want ask", d)
	}
	req2 := requestOf(t, f.before("s1", "git push origin main"))
	if req2 == req {
		t.Fatal("the next identical call reuses the answered request")
	}
	b.eventually(fmt.Sprintf(`!!document.querySelector('[data-request=%q]')`, req2), 5*time.Second)

	// 3. Deny in one tab; the same request answered again from a second
	// tab that still shows it is refused; the call stays refused.
	other := &tab{t: t, ctx: br.NewTab(t), base: f.url, dir: dir}
	other.load("/ui/")
	other.eventually(fmt.Sprintf(`!!document.querySelector('[data-request=%q]')`, req2), 5*time.Second)
	// The second tab keeps the form as it showed it (a page whose live
	// update has not come yet: the update removes an answered request).
	other.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.stale = document.querySelector("#req-%s form").cloneNode(true); undefined`, req2)))
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#req-%s button[value=deny]`, req2))))
	b.eventually(`!!document.querySelector(".flash") && document.querySelector(".flash").textContent.includes("Denied")`, 10*time.Second)
	other.eventually(fmt.Sprintf(`!document.querySelector('[data-request=%q]')`, req2), 5*time.Second) // the live update took it away
	other.do(chromedp.Evaluate[chromedp.Void](`document.getElementById("main").appendChild(window.stale); window.stale.querySelector("button[value=once]").click(); undefined`))
	other.eventually(`!!document.querySelector("[data-code]")`, 10*time.Second)
	if code := evalIn[string](other, `document.querySelector("[data-code]").getAttribute("data-code")`); code != serve.CodeStaleAnswer {
		t.Fatalf("a request answered twice: %q, want %s", code, serve.CodeStaleAnswer)
	}
	other.shot("answered-twice")
	if d := f.before("s1", "git push origin main"); d["verdict"] != "block" || d["code"] != "approval_denied" {
		t.Fatalf("the denied call: %v, want refused (approval_denied)", d)
	}

	// 4. The decisions page shows a block by the rule that made it.
	if d := f.before("s2", "rm -rf build"); d["verdict"] != "block" || d["rule_id"] != "no-rm" {
		t.Fatalf("rm: %v", d)
	}
	for i := range 3 {
		f.before("s2", fmt.Sprintf("go test ./pkg%d", i))
	}
	b.load("/ui/decisions")
	b.do(chromedp.Focus(chromedp.ID("q")), chromedp.KeyEvent("rm -rf\r"))
	// The search loads a new page: wait until it is whole (a row the parser
	// has not finished has no verdict cell yet).
	b.eventually(`location.search.includes("q=rm") && document.readyState === "complete" && Array.from(document.querySelectorAll("table.decisions tbody tr")).every(function (r) { return !!r.querySelector(".verdict"); })`, 10*time.Second)
	rows := evalIn[[]string](b, `Array.from(document.querySelectorAll("table.decisions tbody tr")).map(function (r) { return r.getAttribute("data-rule") + " " + r.querySelector(".verdict").textContent; })`)
	if len(rows) != 1 || rows[0] != "no-rm block" {
		t.Fatalf("the search for rm shows %v, want one block by no-rm", rows)
	}
	b.load("/ui/decisions")
	// The page is live: a new decision appears without a reload.
	b.do(chromedp.Evaluate[chromedp.Void](`window.sameDocument = true; undefined`))
	if d := f.before("s2", "rm -rf dist"); d["verdict"] != "block" {
		t.Fatalf("rm: %v", d)
	}
	b.eventually(`window.sameDocument === true && Array.from(document.querySelectorAll("table.decisions tbody tr[data-rule=no-rm]")).length === 2`, 5*time.Second)
	if n := evalIn[int](b, `document.querySelectorAll("svg.spark rect:not(.base)").length`); n == 0 {
		t.Error("the per-rule chart has no bar")
	}
	b.shot("decisions")
	b.load("/ui/sessions/s1")
	if n := evalIn[int](b, `document.querySelectorAll("table.decisions tbody tr[data-rule]").length`); n < 5 {
		t.Errorf("the session page shows %d calls of s1", n)
	}
	b.shot("session")

	// 5. The playground shows the lint error at its line, and its link
	// carries the policy.
	b.load("/ui/playground")
	b.do(chromedp.SetValue(chromedp.ID("policy"), playPolicy), chromedp.SetValue(chromedp.ID("call"), `{"tool":"Bash","args":{"command":"ls"}}`),
		chromedp.Click(chromedp.CSS(`#playground button[type=submit]`)))
	b.eventually(`document.readyState === "complete" && !!document.getElementById("result")`, 10*time.Second)
	diag := evalIn[[]string](b, `Array.from(document.querySelectorAll(".diagnostics li.mine.sev-error")).map(function (li) { return li.getAttribute("data-line") + " " + li.textContent; })`)
	if len(diag) == 0 || !strings.HasPrefix(diag[0], "6 ") || !strings.Contains(diag[0], "playground.yaml:6:") {
		t.Fatalf("the playground's errors: %v, want one at playground.yaml line 6", diag)
	}
	b.shot("playground")
	if !strings.Contains(evalIn[string](b, "location.hash"), "#p=") {
		t.Error("the playground's result has no shareable fragment")
	}
	link := evalIn[string](b, `document.getElementById("share").href`)
	shared := &tab{t: t, ctx: br.NewTab(t), base: f.url, dir: dir}
	shared.do(chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("#policy")))
	shared.eventually(fmt.Sprintf(`document.getElementById("policy").value === %q`, playPolicy), 5*time.Second)

	// 6. The policy page: layers, the mandatory rule, the shadowed one.
	b.load("/ui/policy")
	if !evalIn[bool](b, `!!document.querySelector('tr[data-rule="confirm-deploy"] .badge.mandatory')`) {
		t.Error("the admin rule is not marked mandatory")
	}
	if !evalIn[bool](b, `!!document.querySelector('tr.shadowed[data-rule="bash-never"] .badge.shadowed')`) {
		t.Error("the shadowed rule is not flagged")
	}
	if evalIn[bool](b, `!!document.querySelector('tr.shadowed[data-rule="confirm-push"]')`) {
		t.Error("a rule that fires is flagged as shadowed")
	}
	b.shot("policy")

	// The CSP let the console's own script run (the inbox updated live and
	// the playground link was made) and nothing inline.
	t.Logf("screenshots in %s", dir)
}
