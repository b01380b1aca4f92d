// Package judge provides the backends of the judges a rule can name
// (`verdict: ask` with `judge: NAME`, eval.Judge): an OpenAI-compatible
// chat-completions endpoint, an external command speaking JSON, and the
// configuration files that name them. A judge is deployment configuration
// (an endpoint, a model, a key), never part of a shared policy file, so it
// is not in policy/ or compile/; it speaks HTTP and runs programs, which
// eval must never do on its own, so it is not in eval/; hooks, the command
// line and serve all use it, so it sits beside hooks, above eval.
//
// Whatever goes wrong is an error, and eval reads an error as the rule's
// ask: a judge that is down, slow or answers nonsense never allows.
package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/fileowner"
	"github.com/celguard/celguard/policy"
)

// ParseAnswer reads a judge's one-line answer: `ALLOW`, `DENY: reason` or
// `ASK: reason` (case-insensitive, the reason optional, surrounding space
// and a trailing period ignored). Only the first non-empty line counts;
// anything else is an error.
func ParseAnswer(text string) (eval.JudgeAnswer, error) {
	line := ""
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	word, reason, _ := strings.Cut(line, ":")
	word = strings.ToUpper(strings.TrimSuffix(strings.TrimSpace(word), "."))
	reason = strings.TrimSpace(reason)
	if len(reason) > 500 {
		reason = reason[:500]
	}
	switch word {
	case "ALLOW":
		return eval.JudgeAnswer{Verdict: policy.Allow, Reason: reason}, nil
	case "DENY", "BLOCK":
		return eval.JudgeAnswer{Verdict: policy.Block, Reason: reason}, nil
	case "ASK":
		return eval.JudgeAnswer{Verdict: policy.Ask, Reason: reason}, nil
	}
	if len(line) > 80 {
		line = line[:80] + "…"
	}
	return eval.JudgeAnswer{}, fmt.Errorf("the answer %q is not ALLOW, DENY: reason or ASK: reason", line)
}

// Spec configures one judge.
type Spec struct {
	// Type is "openai" (an OpenAI-compatible chat-completions endpoint) or
	// "command" (an external program).
	Type string `json:"type"`
	// BaseURL, Model, APIKeyEnv and Prompt configure an openai judge.
	BaseURL   string `json:"base_url,omitempty"`
	Model     string `json:"model,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
	Prompt    string `json:"prompt,omitempty"`
	// Command is a command judge's program and arguments.
	Command []string `json:"command,omitempty"`
	// Timeout bounds the judge's answer ("5s"); empty means
	// eval.DefaultJudgeTimeout.
	Timeout string `json:"timeout,omitempty"`
}

// Config is a judges file: judges by name.
type Config struct {
	Judges map[string]Spec `json:"judges"`
}

// FileName is the judges file's name in the user's configuration directory
// and in the admin directory. It is JSON, not YAML, so that the policy
// loaders, which read every *.yaml there, never take it for a policy.
const FileName = "judges.json"

// AdminFile is the administrator's judges file; its judges replace the
// user's of the same name.
const AdminFile = "/etc/celguard/" + FileName

// maxFile bounds a judges file.
const maxFile = 1 << 20

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`) })

// Parse reads a judges file.
func Parse(data []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("not a judges file: %w", err)
	}
	for name, s := range c.Judges {
		if !nameRE().MatchString(name) {
			return Config{}, fmt.Errorf("judge name %q: use letters, digits, '-' and '_'", name)
		}
		if _, err := s.judge(name); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// judge builds the judge s configures.
func (s Spec) judge(name string) (eval.Judge, error) {
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 {
			return nil, fmt.Errorf("judge %s: timeout %q is not a positive duration", name, s.Timeout)
		}
	}
	switch s.Type {
	case "openai":
		if s.BaseURL == "" || s.Model == "" {
			return nil, fmt.Errorf("judge %s: an openai judge needs base_url and model", name)
		}
		return &OpenAI{BaseURL: s.BaseURL, Model: s.Model, APIKeyEnv: s.APIKeyEnv, Prompt: s.Prompt}, nil
	case "command":
		if len(s.Command) == 0 || !filepath.IsAbs(s.Command[0]) {
			return nil, fmt.Errorf("judge %s: a command judge needs command, its program an absolute path", name)
		}
		return &Command{Argv: s.Command}, nil
	}
	return nil, fmt.Errorf("judge %s: unknown type %q: want openai or command", name, s.Type)
}

// timeout is s's timeout, or zero.
func (s Spec) timeout() time.Duration {
	d, _ := time.ParseDuration(s.Timeout)
	return d
}

// Options are the engine options for the judges of c: one eval.WithJudge
// each, with its own deadline when it sets one.
func (c Config) Options() ([]eval.Option, error) {
	var opts []eval.Option
	for name, s := range c.Judges {
		j, err := s.judge(name)
		if err != nil {
			return nil, err
		}
		if d := s.timeout(); d > 0 {
			j = withTimeout{j, d}
		}
		opts = append(opts, eval.WithJudge(name, j))
	}
	return opts, nil
}

// Load reads the judges files in order, a later file's judges replacing an
// earlier's of the same name; a file that does not exist is skipped. A file
// under /etc/celguard must be owned by root and not writable by group or
// others (as the admin layer), or it is an error.
func Load(paths ...string) (Config, error) {
	out := Config{Judges: map[string]Spec{}}
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Config{}, fmt.Errorf("judges file %s: %w", p, err)
		}
		fi, err := f.Stat()
		if err == nil && strings.HasPrefix(p, "/etc/celguard/") {
			uid, ok := fileowner.UID(fi)
			if !ok || uid != 0 || fi.Mode().Perm()&0o022 != 0 {
				err = errors.New("must be owned by root and not writable by group or others")
			}
		}
		var data []byte
		if err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxFile))
		}
		f.Close()
		if err != nil {
			return Config{}, fmt.Errorf("judges file %s: %w", p, err)
		}
		c, err := Parse(data)
		if err != nil {
			return Config{}, fmt.Errorf("judges file %s: %w", p, err)
		}
		for name, s := range c.Judges {
			out.Judges[name] = s
		}
	}
	return out, nil
}
