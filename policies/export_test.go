package policies

import "testing"

// SetAdminForTest makes the admin layer dir, owned by uid, checking the
// directories above it up to top; the test's cleanup restores AdminDir.
// This is the only way to point the admin layer elsewhere, and it exists
// only in the package's test binary.
func SetAdminForTest(t testing.TB, dir, top string, uid uint32) {
	old := admin
	admin = adminSite{dir: dir, uid: uid, top: top}
	t.Cleanup(func() { admin = old })
}
