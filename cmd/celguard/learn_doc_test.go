package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLearnDocCommands runs docs/learn.md's "Try it" as written: each file
// block is written under the name the text gives it just before, and the
// commands of the sh block run and succeed (lint finds nothing, the
// generated suites pass, and the proposal is the one the text describes).
func TestLearnDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "learn.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Try it\n")
	if !ok {
		t.Fatal(`docs/learn.md has no "## Try it" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	t.Chdir(t.TempDir())
	block := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")
	name := regexp.MustCompile("`([^` ]+\\.[a-z]+)`")
	prev, ran := 0, 0
	for _, m := range block.FindAllStringSubmatchIndex(sec, -1) {
		lang, body := sec[m[2]:m[3]], sec[m[4]:m[5]]
		before := sec[prev:m[0]]
		prev = m[1]
		if lang != "sh" {
			names := name.FindAllStringSubmatch(before, -1)
			if len(names) == 0 {
				t.Fatalf("no file name before the %s block", lang)
			}
			f := names[len(names)-1][1]
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			args := strings.Fields(line)
			if len(args) == 0 || args[0] != "celguard" {
				t.Fatalf("not a celguard command: %q", line)
			}
			var out, errb bytes.Buffer
			if code := run(args[1:], strings.NewReader(""), &out, &errb); code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", line, code, out.String(), errb.String())
			}
			switch args[1] {
			case "learn":
				if !strings.Contains(out.String(), "proposed 2 rules, dropped 2") {
					t.Fatalf("%s: not the proposal the text describes:\n%s%s", line, out.String(), errb.String())
				}
			case "lint":
				if !strings.Contains(errb.String(), "no problems") {
					t.Fatalf("%s:\n%s%s", line, out.String(), errb.String())
				}
			case "test":
				if !strings.Contains(out.String(), " 0 failed") {
					t.Fatalf("%s:\n%s", line, out.String())
				}
			}
			ran++
		}
	}
	if ran != 3 {
		t.Fatalf("ran %d commands from docs/learn.md, want 3", ran)
	}
}
