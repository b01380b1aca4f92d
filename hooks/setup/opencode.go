package setup

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"

	"github.com/celguard/celguard/hooks"
)

//go:embed opencode_plugin.js
var opencodePluginJS string

// opencodeCommandLine is the plugin's line that holds its command.
var opencodeCommandLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^const COMMAND = (".*")$`) })

// OpencodePlugin is celguard's OpenCode plugin running command (what
// `celguard hook install opencode` writes into OpenCode's plugins
// directory): a JavaScript module that runs command for each tool call,
// prompt and session event with the event on stdin, and does what it
// answers (package hooks, opencode.go, has the protocol).
func OpencodePlugin(command string) []byte {
	q, _ := json.Marshal(command) // a JavaScript string literal too
	return []byte(strings.Replace(opencodePluginJS, "__COMMAND__", string(q), 1))
}

// opencodeCommand returns the command of celguard's plugin in data, and
// whether data is celguard's plugin for OpenCode.
func opencodeCommand(data []byte) (string, bool) {
	if !bytes.Contains(data, []byte("// celguard:command")) {
		return "", false
	}
	m := opencodeCommandLine().FindSubmatch(data)
	if m == nil {
		return "", false
	}
	var c string
	if json.Unmarshal(m[1], &c) != nil || !isOurs(obj("command", c), hooks.OpenCode) {
		return "", false
	}
	return c, true
}

// installOpencode is Install for OpenCode: the plugin file is celguard's
// alone, written whole; a file of the same name that is not celguard's
// plugin is left alone.
func installOpencode(settings []byte, command string) ([]byte, bool, error) {
	want := OpencodePlugin(command)
	if len(bytes.TrimSpace(settings)) > 0 {
		if _, ok := opencodeCommand(settings); !ok {
			return nil, false, errors.New("the file is not celguard's OpenCode plugin: move it away first")
		}
	}
	if bytes.Equal(settings, want) {
		return settings, false, nil
	}
	return want, true, nil
}
