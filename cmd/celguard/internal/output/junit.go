package output

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/celguard/celguard/policytest"
)

// The JUnit XML elements celguard writes. They follow the de-facto schema
// of Jenkins' JUnit plugin (junit-10.xsd), which GitHub, GitLab and most CI
// test reporters read: testsuites > testsuite > testcase > failure | error,
// system-out.

// JUnitTestSuites is the root element.
type JUnitTestSuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite is one suite file.
type JUnitTestSuite struct {
	Name     string          `xml:"name,attr"`
	Tests    int             `xml:"tests,attr"`
	Failures int             `xml:"failures,attr"`
	Errors   int             `xml:"errors,attr"`
	Skipped  int             `xml:"skipped,attr"`
	Time     string          `xml:"time,attr"`
	File     string          `xml:"file,attr,omitempty"`
	Cases    []JUnitTestCase `xml:"testcase"`
}

// JUnitTestCase is one case; classname is the suite's name.
type JUnitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	SystemOut *JUnitText    `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure (a decision differed from the expectation) or
// an error (the suite could not run).
type JUnitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// JUnitText is an element holding text as CDATA, so it reads as written.
type JUnitText struct {
	Text string `xml:",cdata"`
}

// JUnit writes the report as JUnit XML: one testsuite per suite file, one
// testcase per case with classname the suite's name. A failing case has a
// failure element whose message lists the differing fields and whose text
// shows each failing step's table and the rules tried; its system-out holds
// the expected and actual decisions as JSON. A suite that could not run is
// a testsuite with one testcase holding an error element.
func JUnit(w io.Writer, rep *policytest.Report) error {
	root := JUnitTestSuites{Name: "celguard test"}
	var total time.Duration
	for _, s := range rep.Suites {
		js := JUnitTestSuite{Name: s.Name, File: s.File}
		var suiteTime time.Duration
		if s.Error != "" {
			js.Tests, js.Errors = 1, 1
			js.Cases = append(js.Cases, JUnitTestCase{Name: "load suite", Classname: s.Name, File: s.File, Time: seconds(0),
				Error: &JUnitProblem{Message: firstLine(s.Error), Type: "suite_error", Text: s.Error}})
		}
		for _, c := range s.Cases {
			suiteTime += c.Duration
			jc := JUnitTestCase{Name: c.Name, Classname: s.Name, File: s.File, Line: c.Line, Time: seconds(c.Duration)}
			js.Tests++
			if !c.Pass {
				js.Failures++
				jc.Failure = &JUnitProblem{Message: failureMessage(c), Type: "mismatch", Text: failureText(s, c)}
				if out := decisionsJSON(c); out != "" {
					jc.SystemOut = &JUnitText{Text: out}
				}
				if len(c.Mismatches) == 0 {
					jc.Failure.Type = "failure"
				}
			}
			js.Cases = append(js.Cases, jc)
		}
		js.Time = seconds(suiteTime)
		total += suiteTime
		root.Tests += js.Tests
		root.Failures += js.Failures
		root.Errors += js.Errors
		root.Suites = append(root.Suites, js)
	}
	root.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// failureMessage is the case's failures on one line.
func failureMessage(c policytest.CaseResult) string {
	var parts []string
	for _, f := range c.Failures {
		parts = append(parts, firstLine(f))
	}
	return strings.Join(parts, " | ")
}

// failureText is what the text format prints for the case.
func failureText(s policytest.SuiteResult, c policytest.CaseResult) string {
	var b strings.Builder
	writeCaseText(&errWriter{w: &b}, s, c)
	return "\n" + b.String()
}

// decisionsJSON is the expected and actual decision of each failing step.
func decisionsJSON(c policytest.CaseResult) string {
	if len(c.Mismatches) == 0 {
		return ""
	}
	b, err := json.MarshalIndent(c.Mismatches, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}
