package policies

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/celguard/celguard/policy"
)

// BundleRecommended is the bundle `celguard eval` uses by default.
const BundleRecommended = "recommended"

// bundles names the built-in policies of each bundle. The tool classes
// (tool-classes.yaml) come with every bundle.
//
// recommended: what protects an agent out of the box. Priority bands keep
// the policies composable: 1000 halts, 900 dangerous commands and secret
// redaction, 890 and 880 self-protection, 800 loop blocks, 700 sensitive files, 600 risky commands, 500
// workspace boundary, 400 rate limits, 100 and 10 safe defaults. The
// mcp-arguments policy is an example to copy, not a default.
var bundles = map[string][]string{
	BundleRecommended: {"loop-detection", "dangerous-commands", "self-protection", "risky-commands",
		"sensitive-files", "workspace-boundary", "safe-defaults", "rate-limit", "secret-redaction"},
	"minimal": {"loop-detection", "dangerous-commands", "self-protection", "secret-redaction"},
	"none":    {},
}

// Bundles returns the bundle names and the built-in policies in each; "all"
// is every built-in policy.
func Bundles() map[string][]string {
	out := map[string][]string{"all": Names()}
	for k, v := range bundles {
		out[k] = slices.Clone(v)
	}
	return out
}

// Names returns the names of the built-in policies, sorted. A built-in
// policy's name is its file name without .yaml.
func Names() []string {
	var out []string
	entries, _ := fs.ReadDir(files, ".")
	for _, e := range entries {
		if policy.IsPolicyFile(e.Name()) && e.Name() != classesFile {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

const classesFile = "tool-classes.yaml"

// ToolClasses returns the built-in tool-class mapping as a source of the
// built-in layer. Tool classes are vocabulary, not policy: commands that
// compile a user's files alone add it, so rules matching classes compile.
func ToolClasses() policy.Source {
	data, _ := fs.ReadFile(files, classesFile) // embedded; a missing file fails the package's tests
	return policy.Source{Name: "builtin/" + classesFile, Data: data, Layer: policy.LayerBuiltin}
}

// Options say which layers Discover reads.
type Options struct {
	// Bundle selects the built-in policies: recommended (the default when
	// empty), minimal, all or none.
	Bundle string
	// Include adds built-in policies to the bundle; Exclude removes them.
	Include, Exclude []string
	// UserDir is the user's policy directory; empty means
	// $XDG_CONFIG_HOME/celguard (~/.config/celguard); "-" means none.
	UserDir string
	// ProjectDir is the project's policy directory; empty means .celguard/
	// at the root of the repository holding WorkDir (or in WorkDir outside a
	// repository); "-" means none.
	ProjectDir string
	// WorkDir is where the project is looked for; empty means the current
	// directory.
	WorkDir string
	// Explicit are policy files and directories named by the user.
	Explicit []string
	// Registered are policies an embedding program adds; they form the
	// highest layer.
	Registered []policy.Source
}

// Discover returns the policy sources of every layer, each marked with its
// layer: the built-in bundle, the user directory, the project directory,
// the explicit paths and the registered sources. compile.Compile resolves
// collisions between layers (higher layers win) and applies Overrides files.
// A user or project directory that does not exist is skipped; an explicit
// path that does not exist is an error.
func Discover(o Options) ([]policy.Source, error) {
	out, err := builtins(o)
	if err != nil {
		return nil, err
	}
	user, err := userDir(o.UserDir)
	if err != nil {
		return nil, err
	}
	project, err := projectDir(o.ProjectDir, o.WorkDir)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		dir   string
		layer policy.Layer
	}{{user, policy.LayerUser}, {project, policy.LayerProject}} {
		if d.dir == "" {
			continue
		}
		if st, err := os.Stat(d.dir); err != nil || !st.IsDir() {
			continue
		}
		srcs, err := policy.LoadFS(os.DirFS(d.dir), ".", filepath.ToSlash(d.dir))
		if err != nil {
			return nil, fmt.Errorf("%s policies in %s: %w", d.layer, d.dir, err)
		}
		out = append(out, withLayer(srcs, d.layer)...)
	}
	if len(o.Explicit) > 0 {
		srcs, err := policy.LoadPaths(o.Explicit...)
		if err != nil {
			return nil, err
		}
		out = append(out, withLayer(srcs, policy.LayerExplicit)...)
	}
	out = append(out, withLayer(slices.Clone(o.Registered), policy.LayerRegistered)...)
	return out, nil
}

func withLayer(srcs []policy.Source, l policy.Layer) []policy.Source {
	for i := range srcs {
		srcs[i].Layer = l
	}
	return srcs
}

// builtins returns the tool classes and the bundle's built-in policies.
func builtins(o Options) ([]policy.Source, error) {
	bundle := o.Bundle
	if bundle == "" {
		bundle = BundleRecommended
	}
	all := Names()
	names, ok := Bundles()[bundle]
	if !ok {
		return nil, fmt.Errorf("unknown bundle %q: choose one of recommended, minimal, all, none", bundle)
	}
	for _, n := range slices.Concat(o.Include, o.Exclude) {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("no built-in policy %q: the built-in policies are %s", n, strings.Join(all, ", "))
		}
	}
	for _, n := range o.Include {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(o.Exclude, n) })
	out := []policy.Source{ToolClasses()}
	sort.Strings(names)
	for _, n := range names {
		data, err := fs.ReadFile(files, n+".yaml")
		if err != nil {
			return nil, fmt.Errorf("built-in policy %s: %w", n, err)
		}
		out = append(out, policy.Source{Name: "builtin/" + n + ".yaml", Data: data, Layer: policy.LayerBuiltin})
	}
	return out, nil
}

func userDir(dir string) (string, error) {
	switch dir {
	case "-":
		return "", nil
	case "":
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
			return filepath.Join(x, "celguard"), nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil // no home: no user layer
		}
		return filepath.Join(home, ".config", "celguard"), nil
	}
	return dir, nil
}

// projectDir finds .celguard/ at the root of the repository holding work.
func projectDir(dir, work string) (string, error) {
	switch dir {
	case "-":
		return "", nil
	case "":
	default:
		return dir, nil
	}
	if work == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("project policies: %w", err)
		}
		work = wd
	}
	abs, err := filepath.Abs(work)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return filepath.Join(d, ".celguard"), nil
		}
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	return filepath.Join(abs, ".celguard"), nil
}
