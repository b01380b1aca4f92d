package policy

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The adapters to yaml.v3's error messages. Its syntax errors are plain
// errors whose text carries the line ("yaml: line 3: did not find expected
// key"), and some of those lines are off by one, so the syntax diagnostic is
// made from the text. Everything that reads that text is here, pinned by
// yamlmessages_test.go against the yaml.v3 in go.mod, so that an upgrade that
// changes a message fails that test rather than silently moving a
// diagnostic.

// yamlLineRe finds the line yaml.v3 puts in a message.
var yamlLineRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// yamlParserProblems are the problems the YAML parser (as opposed to its
// scanner) reports. yaml.v3 gives their line 0-based: the line before the
// construct that failed. (Its "did not find expected <stream-start>" cannot
// happen: the scanner always begins with that token.)
var yamlParserProblems = []string{
	"did not find expected <document start>",
	"did not find expected node content", "did not find expected key", "did not find expected '-' indicator",
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "found undefined tag handle",
	"found duplicate %YAML directive", "found incompatible YAML document", "found duplicate %TAG directive",
}

// yamlError turns an error of decoding a file of nlines lines with yaml.v3
// into a yaml_syntax diagnostic on the line of the problem, its message
// without yaml.v3's "yaml: line N:" prefix.
func yamlError(file string, err error, nlines int) Diagnostic {
	line := 1
	m := yamlLineRe().FindStringSubmatch(err.Error())
	if m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = yamlLineRe().ReplaceAllString(msg, "")
	msg = strings.TrimLeft(msg, ": ")
	if m != nil && slices.Contains(yamlParserProblems, msg) {
		line++
	}
	// A problem at the end of a file without a final line break is on its
	// last line, not the one after.
	line = min(line, nlines)
	return Diagnostic{Code: CodeYAMLSyntax, Severity: SeverityError, Pos: Pos{File: file, Line: line, Col: 1}, Message: msg}
}
