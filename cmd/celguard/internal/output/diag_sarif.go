package output

import (
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/celguard/celguard/policy"
)

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/): only the
// properties celguard fills.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string             `json:"id"`
	ShortDescription     sarifMessage       `json:"shortDescription"`
	HelpURI              string             `json:"helpUri"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID           string             `json:"ruleId"`
	RuleIndex        int                `json:"ruleIndex"`
	Level            string             `json:"level"`
	Message          sarifMessage       `json:"message"`
	Locations        []sarifLocation    `json:"locations,omitempty"`
	RelatedLocations []sarifLocation    `json:"relatedLocations,omitempty"`
	Suppressions     []sarifSuppression `json:"suppressions,omitempty"`
}

// sarifSuppression is a # celguard:ignore comment: kind inSource, its
// reason the justification.
type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

type sarifLocation struct {
	ID               *int                  `json:"id,omitempty"`
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
	Message          *sarifMessage         `json:"message,omitempty"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// sarifLevel maps a severity to a SARIF result level.
func sarifLevel(s policy.Severity) string {
	switch s {
	case policy.SeverityError:
		return "error"
	case policy.SeverityWarning:
		return "warning"
	}
	return "note"
}

// sarifURI turns a diagnostic's file name into a SARIF artifact URI: a
// relative reference with forward slashes (code scanning resolves it
// against the repository root), or a file: URI for an absolute path.
func sarifURI(file string) string {
	if filepath.IsAbs(file) {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(file)}).String()
	}
	segs := strings.Split(slashPath(file), "/")
	for i, s := range segs {
		// A ":" would make the first segment read as a URI scheme.
		segs[i] = strings.ReplaceAll(url.PathEscape(s), ":", "%3A")
	}
	return strings.Join(segs, "/")
}

func sarifLoc(p policy.Pos) (sarifLocation, bool) {
	if p.File == "" {
		return sarifLocation{}, false
	}
	loc := sarifLocation{PhysicalLocation: sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: sarifURI(p.File)}}}
	if p.Line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: p.Line, StartColumn: p.Col}
	}
	return loc, true
}

// DiagnosticsSARIF writes ds as a SARIF 2.1.0 log with one run. The tool's
// rules are every diagnostic code, each with its catalogue entry as helpUri;
// each result points at its rule, and its Related positions become
// relatedLocations. version is celguard's version.
func DiagnosticsSARIF(w io.Writer, ds policy.Diagnostics, version string) error {
	driver := sarifDriver{Name: "celguard", Version: version, InformationURI: "https://github.com/celguard/celguard"}
	index := map[policy.Code]int{}
	for i, c := range codeCatalogue {
		index[c.code] = i
		driver.Rules = append(driver.Rules, sarifRule{ID: string(c.code), ShortDescription: sarifMessage{Text: c.short},
			HelpURI: helpURI(c.code), DefaultConfiguration: sarifConfiguration{Level: sarifLevel(c.level)}})
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	for _, d := range ds {
		i, known := index[d.Code]
		if !known {
			// A code missing from the catalogue (a test keeps it complete)
			// still gets a rule, so ruleIndex stays valid.
			i = len(run.Tool.Driver.Rules)
			index[d.Code] = i
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: string(d.Code),
				ShortDescription: sarifMessage{Text: string(d.Code)}, HelpURI: helpURI(d.Code),
				DefaultConfiguration: sarifConfiguration{Level: sarifLevel(d.Severity)}})
		}
		r := sarifResult{RuleID: string(d.Code), RuleIndex: i, Level: sarifLevel(d.Severity), Message: sarifMessage{Text: d.Message}}
		if loc, ok := sarifLoc(d.Pos); ok {
			r.Locations = []sarifLocation{loc}
		}
		for j, p := range d.Related {
			if loc, ok := sarifLoc(p); ok {
				id := j + 1
				loc.ID = &id
				loc.Message = &sarifMessage{Text: "related: " + p.String()}
				r.RelatedLocations = append(r.RelatedLocations, loc)
			}
		}
		if sup := d.Suppressed; sup != nil {
			r.Suppressions = []sarifSuppression{{Kind: "inSource", Justification: sup.Reason}}
		}
		run.Results = append(run.Results, r)
	}
	return writeJSON(w, sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}}, "  ")
}
