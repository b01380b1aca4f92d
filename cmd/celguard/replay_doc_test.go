package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReplayDocCommands runs docs/replay.md as written, in order: each
// file the text says to write ("Write `PATH`:" and the block after it) is
// written, and every line of every sh block runs (celguard in process,
// git as itself), with ~ the test's home directory and "< FILE" as stdin,
// and must succeed; then what the walkthrough says each step shows is
// checked.
func TestReplayDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "replay.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to run docs/replay.md")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Chdir(t.TempDir())

	writeTo := regexp.MustCompile("^Write `([^`]+)`:$")
	outputs := map[string]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(doc))
	var pending, lang string
	var block []string
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, lang, block = true, strings.TrimPrefix(line, "```"), nil
		case in && line == "```":
			in = false
			if pending != "" {
				writeDocFile(t, pending, strings.Join(block, "\n")+"\n")
				pending = ""
				continue
			}
			if lang != "sh" {
				continue
			}
			for _, cmd := range block {
				if strings.TrimSpace(cmd) == "" {
					continue
				}
				outputs[cmd] = runDocLine(t, home, cmd)
				order = append(order, cmd)
			}
		case in:
			block = append(block, line)
		default:
			if m := writeTo.FindStringSubmatch(line); m != nil {
				pending = m[1]
			}
		}
	}
	if len(order) < 12 {
		t.Fatalf("ran %d commands of docs/replay.md; it has more", len(order))
	}
	for cmd, wants := range map[string][]string{
		"celguard replay --monitor-report decisions.jsonl": {
			"monitor report of 1 files", "block before Bash {\"command\":\"git push --force origin main\"} by team/no-force-push",
			`ask before Bash {"command":"make deploy","env":"[MASKED]"} by team/ask-deploy`, "ran but refused now: 2"},
		"celguard replay --policy team/ records/":                                          {"ran but refused now: 2", "records/session.jsonl:2: block before Bash"},
		"celguard learn --policy asks/ --from replay=learn-records/work.jsonl -o proposed": {"proposed 2 rules, dropped 0"},
		"celguard test proposed":                                                           {" 0 failed"},
		"celguard diff --base HEAD:team/ --head team/ records/ decisions.jsonl": {
			"ask → block (tighten), decided by team/no-deploy", "rules added: 1", "rules removed: 1"},
	} {
		out, ok := outputs[cmd]
		if !ok {
			t.Errorf("docs/replay.md no longer runs %q", cmd)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s does not show %q:\n%s", cmd, w, out)
			}
		}
		if strings.Contains(out, "s3cr3t-value") {
			t.Errorf("%s shows the masked secret:\n%s", cmd, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "settings.json")); err != nil {
		t.Errorf("hook install wrote no settings: %v", err)
	}
}

func writeDocFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runDocLine runs one command line of the walkthrough and returns its
// stdout; a failure fails the test.
func runDocLine(t *testing.T, home, line string) string {
	t.Helper()
	args := shellWords(line)
	var stdin io.Reader = strings.NewReader("")
	for i, a := range args {
		if strings.HasPrefix(a, "~/") {
			args[i] = filepath.Join(home, a[2:])
		}
	}
	if n := len(args); n >= 2 && args[n-2] == "<" {
		data, err := os.ReadFile(args[n-1])
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		stdin, args = bytes.NewReader(data), args[:n-2]
	}
	var out, errb bytes.Buffer
	switch args[0] {
	case "celguard":
		if code := run(args[1:], stdin, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", line, code, out.String(), errb.String())
		}
	case "git":
		cmd := exec.Command("git", args[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, errb.String())
		}
	default:
		t.Fatalf("docs/replay.md runs %q: only celguard and git commands run under the test", line)
	}
	return out.String()
}

// shellWords splits a command line at spaces, keeping "double-quoted"
// words whole.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				words = append(words, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		words = append(words, cur.String())
	}
	return words
}
