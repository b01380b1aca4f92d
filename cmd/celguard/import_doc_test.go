package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImportDocCommands runs docs/import.md as written: for each format,
// the "Before" files are written where the text names them and the
// commands of its "The commands" block run and succeed (the suites they
// generate pass).
func TestImportDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "import.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(doc), "\n## ")
	before := regexp.MustCompile("(?m)^Before, (.*):$")
	name := regexp.MustCompile("`([^`]+)`")
	block := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	ran := 0
	for _, sec := range sections {
		m := before.FindStringSubmatchIndex(sec)
		if m == nil {
			continue
		}
		title := strings.SplitN(sec, "\n", 2)[0]
		t.Run(title, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var files []string
			for _, n := range name.FindAllStringSubmatch(sec[m[2]:m[3]], -1) {
				files = append(files, n[1])
			}
			rest := sec[m[1]:]
			cmdAt := strings.Index(rest, "The commands:")
			if cmdAt < 0 {
				t.Fatal("no \"The commands:\" after the before files")
			}
			blocks := block.FindAllStringSubmatch(rest[:cmdAt], -1)
			if len(blocks) != len(files) {
				t.Fatalf("%d files named, %d code blocks", len(files), len(blocks))
			}
			for i, f := range files {
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(blocks[i][1]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmds := block.FindStringSubmatch(rest[cmdAt:])
			for _, line := range strings.Split(strings.TrimSpace(cmds[1]), "\n") {
				args := strings.Fields(line)
				if len(args) == 0 || args[0] != "celguard" {
					t.Fatalf("not a celguard command: %q", line)
				}
				var out, errb bytes.Buffer
				if code := run(args[1:], strings.NewReader(""), &out, &errb); code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", line, code, out.String(), errb.String())
				}
				if args[1] == "test" && !strings.Contains(out.String(), " 0 failed") {
					t.Fatalf("%s:\n%s", line, out.String())
				}
				ran++
			}
		})
	}
	if ran < 6 {
		t.Fatalf("ran %d commands from docs/import.md, want every format's", ran)
	}
}
