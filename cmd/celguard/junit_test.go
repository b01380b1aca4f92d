package main

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/policytest"
)

// The JUnit XML schema as Jenkins' JUnit plugin defines it (junit-10.xsd),
// the de-facto schema CI test reporters read, mirrored as structs: every
// attribute the schema requires, and the counts it implies. Go has no XSD
// validator, so the golden file and the writer's output are checked against
// these.
type xsdTestSuites struct {
	XMLName  xml.Name       `xml:"testsuites"`
	Name     *string        `xml:"name,attr"`
	Tests    *string        `xml:"tests,attr"`
	Failures *string        `xml:"failures,attr"`
	Errors   *string        `xml:"errors,attr"`
	Time     *string        `xml:"time,attr"`
	Suites   []xsdTestSuite `xml:"testsuite"`
	Other    []xml.Name     `xml:",any"`
}

type xsdTestSuite struct {
	Name     *string       `xml:"name,attr"`  // required
	Tests    *string       `xml:"tests,attr"` // required
	Failures *string       `xml:"failures,attr"`
	Errors   *string       `xml:"errors,attr"`
	Skipped  *string       `xml:"skipped,attr"`
	Time     *string       `xml:"time,attr"`
	Cases    []xsdTestCase `xml:"testcase"`
}

type xsdTestCase struct {
	Name      *string     `xml:"name,attr"` // required
	Classname *string     `xml:"classname,attr"`
	Time      *string     `xml:"time,attr"`
	Failures  []xsdResult `xml:"failure"`
	Errors    []xsdResult `xml:"error"`
	Skipped   []xsdResult `xml:"skipped"`
	SystemOut []string    `xml:"system-out"`
}

type xsdResult struct {
	Message *string `xml:"message,attr"`
	Type    *string `xml:"type,attr"`
	Text    string  `xml:",chardata"`
}

// validateJUnit checks doc against the schema's structure and arithmetic.
func validateJUnit(t *testing.T, doc []byte) xsdTestSuites {
	t.Helper()
	var root xsdTestSuites
	if err := xml.Unmarshal(doc, &root); err != nil {
		t.Fatalf("not JUnit XML: %v", err)
	}
	if len(root.Other) > 0 {
		t.Errorf("unexpected elements under testsuites: %v", root.Other)
	}
	num := func(what string, s *string, required bool) int {
		t.Helper()
		if s == nil {
			if required {
				t.Errorf("%s is missing", what)
			}
			return 0
		}
		n, err := strconv.Atoi(*s)
		if err != nil || n < 0 {
			t.Errorf("%s = %q, want a non-negative integer", what, *s)
		}
		return n
	}
	decimal := func(what string, s *string) {
		t.Helper()
		if s == nil {
			return
		}
		if f, err := strconv.ParseFloat(*s, 64); err != nil || f < 0 {
			t.Errorf("%s = %q, want a non-negative decimal", what, *s)
		}
	}
	decimal("testsuites@time", root.Time)
	var tests, failures, errs int
	for i, s := range root.Suites {
		where := "testsuite[" + strconv.Itoa(i) + "]"
		if s.Name == nil || *s.Name == "" {
			t.Errorf("%s@name is missing", where)
		}
		n := num(where+"@tests", s.Tests, true)
		f := num(where+"@failures", s.Failures, false)
		e := num(where+"@errors", s.Errors, false)
		decimal(where+"@time", s.Time)
		if n != len(s.Cases) {
			t.Errorf("%s@tests = %d, but it has %d testcases", where, n, len(s.Cases))
		}
		var gotF, gotE int
		for j, c := range s.Cases {
			cw := where + ".testcase[" + strconv.Itoa(j) + "]"
			if c.Name == nil || *c.Name == "" {
				t.Errorf("%s@name is missing", cw)
			}
			if c.Classname == nil || s.Name == nil || *c.Classname != *s.Name {
				t.Errorf("%s@classname is not the suite's name", cw)
			}
			decimal(cw+"@time", c.Time)
			if len(c.Failures)+len(c.Errors)+len(c.Skipped) > 1 {
				t.Errorf("%s has more than one of failure, error, skipped", cw)
			}
			for _, r := range append(append([]xsdResult(nil), c.Failures...), c.Errors...) {
				if r.Type == nil || *r.Type == "" || r.Message == nil || *r.Message == "" {
					t.Errorf("%s: a failure or error needs message and type", cw)
				}
			}
			gotF += len(c.Failures)
			gotE += len(c.Errors)
		}
		if f != gotF || e != gotE {
			t.Errorf("%s counts %d failures and %d errors, but holds %d and %d", where, f, e, gotF, gotE)
		}
		tests += n
		failures += f
		errs += e
	}
	if got := num("testsuites@tests", root.Tests, false); root.Tests != nil && got != tests {
		t.Errorf("testsuites@tests = %d, suites hold %d", got, tests)
	}
	if got := num("testsuites@failures", root.Failures, false); root.Failures != nil && got != failures {
		t.Errorf("testsuites@failures = %d, suites hold %d", got, failures)
	}
	if got := num("testsuites@errors", root.Errors, false); root.Errors != nil && got != errs {
		t.Errorf("testsuites@errors = %d, suites hold %d", got, errs)
	}
	return root
}

// TestJUnitGoldenMatchesSchema validates the JUnit golden file that
// testdata/script/test_formats.txtar compares the output with.
func TestJUnitGoldenMatchesSchema(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/script/test_formats.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name != "want-junit.xml" {
			continue
		}
		root := validateJUnit(t, f.Data)
		if len(root.Suites) != 3 {
			t.Errorf("golden has %d testsuites, want 3 (broken, clean, guard)", len(root.Suites))
		}
		if !bytes.Contains(f.Data, []byte("<system-out>")) {
			t.Error("golden has no system-out with the expected and actual decisions")
		}
		return
	}
	t.Fatal("test_formats.txtar has no want-junit.xml")
}

// TestJUnitWriterMatchesSchema validates the writer on a report with every
// kind of outcome, including text that needs escaping.
func TestJUnitWriterMatchesSchema(t *testing.T) {
	block := "block"
	rep := &policytest.Report{Passed: 1, Failed: 2, Suites: []policytest.SuiteResult{
		{File: "a_test.yaml", Name: `a <&> "suite"`, Cases: []policytest.CaseResult{
			{Name: "passes", Line: 3, Pass: true},
			{Name: "fails ]]> here", Line: 7, Failures: []string{"step 1: verdict: got allow, want block"},
				Mismatches: []policytest.Mismatch{{Step: 1, Expected: policytest.Expect{Verdict: block}}}},
		}},
		{File: "b_test.yaml", Name: "b", Error: "b_test.yaml:1: cannot parse\nsecond line"},
	}}
	var buf bytes.Buffer
	if err := output.JUnit(&buf, rep); err != nil {
		t.Fatal(err)
	}
	root := validateJUnit(t, buf.Bytes())
	if len(root.Suites) != 2 || *root.Tests != "3" || *root.Failures != "1" || *root.Errors != "1" {
		t.Errorf("totals: %d suites, tests=%s failures=%s errors=%s; want 2, 3, 1, 1", len(root.Suites), *root.Tests, *root.Failures, *root.Errors)
	}
	if !strings.HasPrefix(buf.String(), xml.Header) {
		t.Error("no XML header")
	}
}
