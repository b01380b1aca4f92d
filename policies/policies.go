// Package policies embeds celguard's built-in policies and their test
// suites. `celguard eval` with no --policy flag decides with these.
package policies

import (
	"embed"
	"io/fs"

	"github.com/celguard/celguard/policy"
)

//go:embed *.yaml
var files embed.FS

// FS returns the built-in policy files and their *_test.yaml suites.
func FS() fs.FS { return files }

// Sources returns the built-in policies (test suites excluded), in name
// order, named "builtin/<file>".
func Sources() ([]policy.Source, error) {
	return policy.LoadFS(files, ".", "builtin")
}
