package policies

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/celguard/celguard/internal/fileowner"
	"github.com/celguard/celguard/policy"
)

// AdminDir is the admin layer's directory: the machine administrator's
// policies, whose rules are mandatory unless they say otherwise
// (docs/layers.md, rule 5). No flag or environment variable points
// Discover at another directory.
const AdminDir = "/etc/celguard"

// adminSite is where the admin layer is read and who must own it.
type adminSite struct {
	dir string // the directory, AdminDir
	uid uint32 // the owner every directory and file read must have: root
	// top is the last directory whose ownership is checked going up from
	// dir; empty means the file system root.
	top string
}

// admin is the admin layer's site. Only tests change it (export_test.go),
// to read a directory of their own, owned by the user running them: no
// production code path can point it elsewhere.
var admin = adminSite{dir: AdminDir, uid: 0}

// unsafeAdmin is a reason to refuse the admin layer.
type unsafeAdmin struct {
	path, why string
}

func (e *unsafeAdmin) Error() string { return e.path + ": " + e.why }

// adminSources reads the admin layer: nil when AdminDir does not exist;
// otherwise every policy file in it, provided that the directory, every
// directory and file read in it and every directory above it are owned by
// root and writable by no one else, and that none of them is a symbolic
// link but AdminDir itself or a directory above it. Anything else is an
// admin_layer_unsafe diagnostic: the layer could have been written by
// someone other than the administrator, so nothing may be decided.
func adminSources() ([]policy.Source, error) {
	site := admin
	fi, err := os.Lstat(site.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	refuse := func(path, why string) error {
		return policy.Diagnostic{Code: policy.CodeAdminLayerUnsafe, Severity: policy.SeverityError, Pos: policy.Pos{File: path},
			Message: fmt.Sprintf("the admin layer (%s) is refused: %s; every file and directory of it, and every directory above it, must be owned by root and writable by no one else (docs/diagnostics.md#admin_layer_unsafe)", site.dir, why)}
	}
	if err != nil {
		return nil, refuse(site.dir, err.Error())
	}
	if !fileowner.Supported {
		return nil, refuse(site.dir, "this platform does not say who owns a file")
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if uid, _ := fileowner.UID(fi); uid != site.uid {
			return nil, refuse(site.dir, fmt.Sprintf("a symbolic link owned by uid %d", uid))
		}
	}
	resolved, err := filepath.EvalSymlinks(site.dir)
	if err != nil {
		return nil, refuse(site.dir, describeErr(err))
	}
	if st, err := os.Stat(resolved); err != nil || !st.IsDir() {
		return nil, refuse(site.dir, "not a directory")
	}
	for _, p := range []string{site.dir, resolved} {
		if err := site.checkAbove(p); err != nil {
			return nil, refuse(err.path, err.why)
		}
	}
	srcs, err := policy.LoadFS(adminFS{root: resolved, site: site}, ".", filepath.ToSlash(site.dir))
	var ua *unsafeAdmin
	switch {
	case errors.As(err, &ua):
		return nil, refuse(ua.path, ua.why)
	case err != nil:
		return nil, refuse(site.dir, describeErr(err))
	}
	if srcs == nil {
		srcs = []policy.Source{}
	}
	return srcs, nil
}

func describeErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// checkAbove checks every directory above path, up to site.top or the file
// system root: owned by site.uid and not writable by group or others (a
// symbolic link among them must be owned by site.uid; what it points to is
// checked through the resolved path).
func (site adminSite) checkAbove(path string) *unsafeAdmin {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return &unsafeAdmin{d, err.Error()}
		}
		if err := site.owns(fi, fi.Mode()&fs.ModeSymlink == 0); err != "" {
			return &unsafeAdmin{d, err}
		}
		if d == site.top || filepath.Dir(d) == d {
			return nil
		}
	}
}

// owns says why fi is not the administrator's, or "" when it is: owned by
// site.uid and, when checkMode, not writable by group or others.
func (site adminSite) owns(fi fs.FileInfo, checkMode bool) string {
	uid, ok := fileowner.UID(fi)
	switch {
	case !ok:
		return "its owner cannot be read"
	case uid != site.uid:
		return fmt.Sprintf("owned by uid %d, not %d", uid, site.uid)
	case checkMode && fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %04o)", fi.Mode().Perm())
	}
	return ""
}

// adminFS is the admin directory as policy.LoadFS reads it: every
// directory listed and every file read is opened without following a
// symbolic link and checked, on the open file, to be the administrator's.
// So exactly what is read is checked, with no moment between the check and
// the read at which someone else could swap the file.
type adminFS struct {
	root string
	site adminSite
}

func (a adminFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	full := filepath.Join(a.root, filepath.FromSlash(name))
	f, err := openNoFollow(full)
	if err != nil {
		if fi, lerr := os.Lstat(full); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &unsafeAdmin{full, "a symbolic link (the admin layer follows none; copy the file instead)"}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		if why := a.site.owns(fi, true); why != "" {
			err = &unsafeAdmin{full, why}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
