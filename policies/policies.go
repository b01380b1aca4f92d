// Package policies embeds celguard's built-in policies and their test
// suites, and finds the layers of policies in force on a machine
// (Discover): the built-in bundle, the user's directory, the project's
// .celguard/ (marked untrusted unless the user's trust store, package trust,
// holds its content), --policy files, an embedding program's sources and
// the administrator's /etc/celguard (read only when root owns it). See
// docs/layers.md. `celguard eval` with no --policy flag decides with these.
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
