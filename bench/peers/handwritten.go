// Package peers implements the 20 rules of the celguard benchmark policy
// (internal/benchdata.Policy20) three more ways, so that celguard can be
// measured side by side with them (issue 6): hand-written Go with the same
// regexes, raw cel-go with one program per rule tried in order, and OPA with
// the rules in Rego. Each Decider returns the verdict and the id of the rule
// that decided, first match wins (priority order, ties in file order), allow
// with no rule when nothing matches. This is a module of its own so that the
// celguard module never depends on OPA.
package peers

import (
	"regexp"
	"strings"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/eval"
)

// Decider decides one call: the verdict and the rule that decided ("" when
// none matched and the default, allow, applied).
type Decider interface {
	Decide(c eval.Call) (verdict, rule string)
}

// Handwritten is the policy as plain Go: a switch on the tool name, then the
// rules of that tool in priority order with the same regexes, each behind
// the literal prefilter celguard uses (a regex runs only on a string that
// contains a literal every match needs: celenv.RequiredLiterals), as a
// careful hand-written policy would do.
type Handwritten struct {
	rmRoot, mkfs, ddDev, forkBomb, chmodRoot, curlSh         *matcher
	sudo, forcePush, resetHard, noVerify, npmPublish, docker *matcher
	env, ssh, keys                                           *matcher
	gitRead, build, ls                                       *matcher
}

// matcher is a regex behind a literal prefilter.
type matcher struct {
	re   *regexp.Regexp
	lits []string
}

func mustMatcher(pattern string) *matcher {
	return &matcher{re: regexp.MustCompile(pattern), lits: celenv.RequiredLiterals(pattern)}
}

// MatchString reports whether s matches, testing the literals first.
func (m *matcher) MatchString(s string) bool {
	if len(m.lits) == 0 {
		return m.re.MatchString(s)
	}
	for _, l := range m.lits {
		if strings.Contains(s, l) {
			return m.re.MatchString(s)
		}
	}
	return false
}

// handwritten is built at init, as a hand-written policy would be.
var handwritten = NewHandwritten()

// DefaultHandwritten returns the Handwritten built at init.
func DefaultHandwritten() *Handwritten { return handwritten }

// NewHandwritten compiles the regexes and their prefilters.
func NewHandwritten() *Handwritten {
	return &Handwritten{
		rmRoot:     mustMatcher(`rm\s+-[a-zA-Z]*r[a-zA-Z]*\s+/(\s|$)`),
		mkfs:       mustMatcher(`\bmkfs(\.[a-z0-9]+)?\b`),
		ddDev:      mustMatcher(`\bdd\b.*\bof=/dev/`),
		forkBomb:   mustMatcher(`:\(\)\s*\{\s*:\|:&\s*\};:`),
		chmodRoot:  mustMatcher(`chmod\s+-R\s+777\s+/(\s|$)`),
		curlSh:     mustMatcher(`(curl|wget)[^|]*\|\s*(ba|z)?sh\b`),
		sudo:       mustMatcher(`(^|[;&|]\s*)sudo\s`),
		forcePush:  mustMatcher(`git\s+push\s+.*(--force|-f)\b`),
		resetHard:  mustMatcher(`git\s+reset\s+--hard`),
		noVerify:   mustMatcher(`git\s+commit\s+.*--no-verify`),
		npmPublish: mustMatcher(`npm\s+publish`),
		docker:     mustMatcher(`docker\s+(run|exec)`),
		env:        mustMatcher(`(^|/)\.env(\.[a-z]+)?$`),
		ssh:        mustMatcher(`(^|/)\.ssh/`),
		keys:       mustMatcher(`\.(pem|key)$`),
		gitRead:    mustMatcher(`^git\s+(status|log|diff|show|branch)\b`),
		build:      mustMatcher(`^(go\s+(build|test|vet)|npm\s+test|make)\b`),
		ls:         mustMatcher(`^(ls|cat|head|tail|wc|pwd|echo)\b`),
	}
}

// Decide implements Decider.
func (h *Handwritten) Decide(c eval.Call) (string, string) {
	switch c.Tool {
	case "Read", "Glob", "Grep":
		return "allow", "allow-safe-read"
	case "Write", "Edit":
		p, _ := c.Args["file_path"].(string)
		switch {
		case h.env.MatchString(p) && !strings.HasSuffix(p, ".env.example"):
			return "block", "deny-write-env"
		case h.ssh.MatchString(p):
			return "block", "deny-write-ssh"
		case h.keys.MatchString(p):
			return "block", "deny-write-keys"
		case !strings.HasPrefix(p, c.Cwd+"/"):
			return "ask", "ask-write-outside"
		}
	case "Bash":
		cmd, _ := c.Args["command"].(string)
		switch {
		case h.rmRoot.MatchString(cmd):
			return "block", "deny-rm-root"
		case h.mkfs.MatchString(cmd):
			return "block", "deny-mkfs"
		case h.ddDev.MatchString(cmd):
			return "block", "deny-dd-dev"
		case h.forkBomb.MatchString(cmd):
			return "block", "deny-fork-bomb"
		case h.chmodRoot.MatchString(cmd):
			return "block", "deny-chmod-777-root"
		case h.curlSh.MatchString(cmd):
			return "block", "deny-curl-sh"
		case h.sudo.MatchString(cmd):
			return "ask", "ask-sudo"
		case h.forcePush.MatchString(cmd):
			return "ask", "ask-force-push"
		case h.resetHard.MatchString(cmd):
			return "ask", "ask-reset-hard"
		case h.noVerify.MatchString(cmd):
			return "ask", "ask-no-verify"
		case h.npmPublish.MatchString(cmd):
			return "ask", "ask-npm-publish"
		case h.docker.MatchString(cmd):
			return "ask", "ask-docker"
		case h.gitRead.MatchString(cmd):
			return "allow", "allow-git-read"
		case h.build.MatchString(cmd):
			return "allow", "allow-build"
		case h.ls.MatchString(cmd):
			return "allow", "allow-ls"
		}
	}
	return "allow", ""
}
