package policies

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/trust"
)

// ErrNoPolicyFiles is the error (wrapped) of explicit paths that hold no
// policy file; celguard lint accepts them when they hold test suites.
var ErrNoPolicyFiles = errors.New("no policy files")

// BundleRecommended is the bundle `celguard eval` uses by default.
const BundleRecommended = "recommended"

// bundles names the built-in policies of each bundle. The tool classes
// (tool-classes.yaml) come with every bundle.
//
// recommended: what protects an agent out of the box. Priority bands keep
// the policies composable: 1000 halts, 900 dangerous commands and secret
// redaction, 890 and 880 self-protection, 800 loop blocks, 700 sensitive files and exfiltration, 600 risky commands, 500
// workspace boundary, 400 rate limits, 100 and 10 safe defaults. The
// mcp-arguments policy is an example to copy, not a default.
var bundles = map[string][]string{
	BundleRecommended: {"loop-detection", "dangerous-commands", "self-protection", "risky-commands",
		"sensitive-files", "exfiltration", "mcp-effects", "workspace-executables", "workspace-boundary", "safe-defaults", "rate-limit", "secret-redaction"},
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
	// repository); "-" means none. The trust store knows a project by the
	// directory holding its policy directory (ProjectRoot).
	ProjectDir string
	// WorkDir is where the project is looked for; empty means the current
	// directory.
	WorkDir string
	// TrustFile is the trust store (package trust) that says whether the
	// project layer is trusted; empty means trust.DefaultPath
	// ($XDG_CONFIG_HOME/celguard/trust.json); "-" means none: the project
	// layer is untrusted.
	TrustFile string
	// Explicit are policy files and directories named by the user.
	Explicit []string
	// Registered are policies an embedding program adds; they form the
	// highest layer but the admin one.
	Registered []policy.Source
	// Layers asks Select for every layer even beside Explicit paths (what
	// the command line's --effective asks). Bundle, Include, Exclude,
	// UserDir and ProjectDir ask for them too.
	Layers bool
	// HomeDir is where the user's BitCode guard plugins are looked for
	// (~/.agents/guards, ~/.claude/guards, ~/.bitcode/guards, in the user
	// layer); empty means the home directory when UserDir is empty too,
	// and none when UserDir names a directory; "-" means none. The
	// project's guards (the same three directories at the project root)
	// join the project layer.
	HomeDir string
}

// explicitOnly reports whether Select reads only the Explicit paths: they
// are given and nothing asks for the layers.
func (o Options) explicitOnly() bool {
	return len(o.Explicit) > 0 && !o.Layers && o.Bundle == "" && len(o.Include) == 0 && len(o.Exclude) == 0 &&
		o.UserDir == "" && o.ProjectDir == ""
}

// Select returns the policy sources the celguard command line decides
// with, for the same choices: it is what `celguard eval` and `celguard
// hook` read, and what package celguard's Load compiles, so a program
// that embeds celguard decides exactly as the command line does.
//
//   - Explicit paths alone (no Layers, Bundle, Include, Exclude, UserDir
//     or ProjectDir): only those files decide, as the explicit layer, with
//     the built-in tool classes (rules may match classes and read
//     command, paths and classes) and the Registered sources. An explicit
//     path that does not exist, or paths that hold no policy file, are an
//     error.
//   - Otherwise: every layer, as DiscoverLayers reads them (the built-in
//     bundle, which always brings the tool classes, the user's and the
//     project's directories, the Explicit paths, the Registered sources
//     and the admin layer).
//
// The Discovery's Project and AdminDir are set only when the layers were
// read.
func Select(o Options) (*Discovery, error) {
	for _, p := range o.Explicit {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
	}
	if !o.explicitOnly() {
		return DiscoverLayers(o)
	}
	srcs, err := loadPaths(o.Explicit)
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%w in %s (policy files are *.yaml and *.yml, not *_test.yaml)", ErrNoPolicyFiles, orList(o.Explicit))
	}
	srcs = withLayer(srcs, policy.LayerExplicit)
	srcs = append(srcs, withLayer(slices.Clone(o.Registered), policy.LayerRegistered)...)
	return &Discovery{Sources: append(srcs, ToolClasses())}, nil
}

// orList writes paths as "a", "a or b", "a, b or c".
func orList(paths []string) string {
	s := ""
	for i, p := range paths {
		switch {
		case i == 0:
		case i == len(paths)-1:
			s += " or "
		default:
			s += ", "
		}
		s += p
	}
	return s
}

// Discovery is what DiscoverLayers found.
type Discovery struct {
	// Sources are the policy sources of every layer, as Discover returns
	// them.
	Sources []policy.Source
	// Project is the project layer and whether the user trusts it; nil when
	// there is no project layer (no directory, or no policy file in it).
	Project *Project
	// AdminDir is the admin layer's directory when it was read; empty when
	// there is none.
	AdminDir string
}

// Project is the project layer and whether the user trusts it.
type Project struct {
	// Root is the project root as the trust store keys it (trust.Root).
	Root string
	// Dir is the project's policy directory.
	Dir string
	// Digest and Files are trust.Digest of the files read from Dir.
	Digest string
	Files  []trust.File
	// Status says whether the trust store trusts this content, and if not
	// why (not in the store, or what changed since).
	trust.Status
	// StoreErr is why the trust store could not be read, when it could not
	// (malformed, unsafe): the project is then untrusted, and whoever shows
	// the layers should say why.
	StoreErr error
}

// Discover returns the policy sources of every layer, each marked with its
// layer: the built-in bundle, the user directory, the project directory,
// the explicit paths, the registered sources and the admin directory
// (AdminDir). compile.Compile resolves collisions between layers (higher
// layers win) and applies Overrides files.
//
// The project's sources are marked Untrusted unless the trust store holds
// the project's root with the digest of exactly the files read
// (docs/layers.md, rule 4). A trust store that cannot be read leaves the
// project untrusted and is not an error (see DiscoverLayers).
//
// A user or project directory that does not exist is skipped; an explicit
// path that does not exist is an error. The admin layer is read only when
// root owns it and no one else can write it or any directory above it; a
// missing AdminDir is no admin layer, any other problem with it is a
// policy.Diagnostic error of code admin_layer_unsafe: fail closed.
func Discover(o Options) ([]policy.Source, error) {
	d, err := DiscoverLayers(o)
	if err != nil {
		return nil, err
	}
	return d.Sources, nil
}

// DiscoverLayers is Discover, also saying what it found of the project
// layer and its trust, and of the admin layer.
func DiscoverLayers(o Options) (*Discovery, error) {
	out, err := builtins(o)
	if err != nil {
		return nil, err
	}
	d := &Discovery{}
	user, err := userDir(o.UserDir)
	if err != nil {
		return nil, err
	}
	if user != "" {
		srcs, _, err := loadDir(user)
		if err != nil {
			return nil, fmt.Errorf("%s policies in %s: %w", policy.LayerUser, user, err)
		}
		out = append(out, withLayer(srcs, policy.LayerUser)...)
	}
	if home := homeDir(o); home != "" {
		srcs, _, err := loadGuards(home)
		if err != nil {
			return nil, err
		}
		out = append(out, withLayer(srcs, policy.LayerUser)...)
	}
	var srcs []policy.Source
	if d.Project, srcs, err = projectLayer(o); err != nil {
		return nil, err
	}
	out = append(out, srcs...)
	if len(o.Explicit) > 0 {
		srcs, err := loadPaths(o.Explicit)
		if err != nil {
			return nil, err
		}
		out = append(out, withLayer(srcs, policy.LayerExplicit)...)
	}
	out = append(out, withLayer(slices.Clone(o.Registered), policy.LayerRegistered)...)
	if srcs, err = adminSources(); err != nil {
		return nil, err
	}
	if srcs != nil {
		d.AdminDir = admin.dir
	}
	d.Sources = append(out, withLayer(srcs, policy.LayerAdmin)...)
	return d, nil
}

// loadDir reads the policy files of a user or project directory: the
// sources named by their path on disk, and the same sources named relative
// to dir (what a trust digest covers). A directory that does not exist has
// none.
func loadDir(dir string) (srcs, rel []policy.Source, err error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil, nil
	}
	rel, err = policy.LoadFS(os.DirFS(dir), ".", "")
	if err != nil {
		return nil, nil, err
	}
	prefix := filepath.ToSlash(dir)
	for _, s := range rel {
		s.Name = path.Join(prefix, s.Name)
		srcs = append(srcs, s)
	}
	return srcs, rel, nil
}

// ProjectLayer reads the project layer Options name (ProjectDir, WorkDir)
// and checks it against the trust store (TrustFile), as DiscoverLayers
// does: nil when there is no project layer (no directory, or no policy file
// in it). celguard trust shows and records what it returns.
func ProjectLayer(o Options) (*Project, error) {
	p, _, err := projectLayer(o)
	return p, err
}

// projectLayer is ProjectLayer with the layer's sources, marked with the
// layer and, unless trusted, Untrusted.
func projectLayer(o Options) (*Project, []policy.Source, error) {
	dir, err := projectDir(o.ProjectDir, o.WorkDir)
	if err != nil || dir == "" {
		return nil, nil, err
	}
	srcs, rel, err := loadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s policies in %s: %w", policy.LayerProject, dir, err)
	}
	// The project's BitCode guards, beside .celguard/: named on disk, and
	// relative to .celguard/ ("../.bitcode/guards/x.yaml") in the digest,
	// so trusting the project trusts them and editing one breaks the trust.
	gsrcs, grel, err := loadGuards(filepath.Dir(dir))
	if err != nil {
		return nil, nil, err
	}
	srcs, rel = append(srcs, gsrcs...), append(rel, grel...)
	if len(srcs) == 0 {
		return nil, nil, nil
	}
	p, err := projectTrust(dir, rel, o.TrustFile)
	if err != nil {
		return nil, nil, err
	}
	for i := range srcs {
		srcs[i].Untrusted = !p.Trusted
	}
	return p, withLayer(srcs, policy.LayerProject), nil
}

// projectTrust digests the project layer read from dir (rel: its files
// named relative to dir) and checks it against the trust store.
func projectTrust(dir string, rel []policy.Source, trustFile string) (*Project, error) {
	root, err := trust.Root(filepath.Dir(dir))
	if err != nil {
		return nil, fmt.Errorf("%s policies in %s: %w", policy.LayerProject, dir, err)
	}
	p := &Project{Root: root, Dir: dir}
	p.Digest, p.Files = trust.Digest(rel)
	if trustFile == "-" {
		p.Status = trust.Status{Reason: "no trust store is read"}
		return p, nil
	}
	if trustFile == "" {
		if trustFile, err = trust.DefaultPath(); err != nil {
			p.StoreErr = err
			p.Status = trust.Status{Reason: "the trust store cannot be found: " + err.Error()}
			return p, nil
		}
	}
	store, err := trust.Load(trustFile)
	if err != nil {
		// Fail closed, but not shut: an unreadable store trusts nothing,
		// and an untrusted project can only restrict, so the other layers
		// still decide. Refusing every call instead would let whoever
		// breaks the store stop the agent without gaining anything.
		p.StoreErr = err
		p.Status = trust.Status{Reason: err.Error()}
		return p, nil
	}
	p.Status = store.Check(root, p.Digest, p.Files)
	return p, nil
}

// ProjectRoot returns the root of the project holding work (the current
// directory when empty), as the trust store keys it (trust.Root): the
// nearest directory at or above work that holds .git, or work itself
// outside a repository. Its policy directory is .celguard/ in it.
func ProjectRoot(work string) (string, error) {
	dir, err := projectDir("", work)
	if err != nil {
		return "", err
	}
	return trust.Root(filepath.Dir(dir))
}

// homeDir is the directory whose BitCode guards form part of the user layer
// (Options.HomeDir); "" for none.
func homeDir(o Options) string {
	switch {
	case o.HomeDir == "-":
		return ""
	case o.HomeDir != "":
		return o.HomeDir
	case o.UserDir != "":
		return ""
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return home
}

// loadGuards reads the BitCode guard plugins of the three guard
// directories under root, in BitCode's order of precedence, as policy
// sources named by their files on disk (importer.GuardSources), and the
// files read, named relative to root/.celguard (what a trust digest
// covers). A guard file that cannot be read natively is an error (a
// policy.Diagnostics at its position): fail closed, as for a policy file.
func loadGuards(root string) (srcs, rel []policy.Source, err error) {
	var files []importer.File
	for _, dir := range importer.GuardDirs(root) {
		gf, err := importer.ReadGuardDir(os.DirFS(dir), ".", filepath.ToSlash(dir))
		if err != nil {
			return nil, nil, fmt.Errorf("BitCode guards in %s: %w", dir, err)
		}
		files = append(files, gf...)
	}
	if len(files) == 0 {
		return nil, nil, nil
	}
	srcs, _, err = importer.GuardSources(files)
	if err != nil {
		return nil, nil, err
	}
	prefix := filepath.ToSlash(root) + "/"
	for _, f := range files {
		rel = append(rel, policy.Source{Name: "../" + strings.TrimPrefix(f.Name, prefix), Data: f.Data})
	}
	return srcs, rel, nil
}

// loadPaths is policy.LoadPaths reading BitCode guard files and guard
// directories (a guards directory of .agents, .claude or .bitcode) natively.
func loadPaths(paths []string) ([]policy.Source, error) {
	var out []policy.Source
	for _, p := range paths {
		var files []importer.File
		switch st, err := os.Stat(p); {
		case err != nil:
			return nil, err
		case st.IsDir() && importer.IsGuardDir(p):
			if files, err = importer.ReadGuardDir(os.DirFS(p), ".", filepath.ToSlash(p)); err != nil {
				return nil, err
			}
		case !st.IsDir() && importer.IsGuardFile(p):
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			files = []importer.File{{Name: filepath.ToSlash(p), Data: b}}
		default:
			srcs, err := policy.LoadPaths(p)
			if err != nil {
				return nil, err
			}
			out = append(out, srcs...)
			continue
		}
		srcs, _, err := importer.GuardSources(files)
		if err != nil {
			return nil, err
		}
		out = append(out, srcs...)
	}
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
		d, err := trust.ConfigDir()
		if err != nil {
			return "", nil // no home: no user layer
		}
		return d, nil
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
	root, _, err := ProjectWalk(work)
	if err != nil {
		return "", fmt.Errorf("project policies: %w", err)
	}
	return filepath.Join(root, ".celguard"), nil
}
