// Package bundle is a signed, versioned policy set that a security team
// builds once and rolls out to every machine: the policies and their test
// suites, the lint result and the cost proofs of the set, and a manifest
// (name, version, a serial that only grows, when and by which celguard it
// was built, the set's digest and the layer it is meant for), in one
// gzip-compressed tar archive.
//
// Build makes a bundle from a directory and refuses a set that does not
// lint clean at error severity or whose suites fail. Read parses an archive
// within Limits, checked before anything is decompressed or written, and
// Unpack writes one below a directory it cannot escape (os.Root). Sign and
// Verify put the bundle's digest and manifest in an in-toto Statement
// inside a DSSE envelope (the maintained go-securesystemslib and in-toto
// attestation libraries; no cryptography or encoding of our own); a
// TrustPolicy names the keys an organisation controls and how many of them
// must have signed. OCI and HTTPS fetch a bundle and its envelope from a
// registry (oras-go) or a URL, and Store keeps the last good bundle on disk,
// refuses a serial lower than the one in force, and never hands out a
// bundle that is unsigned or badly signed. docs/bundles.md walks through
// the whole rollout and states the threat model.
//
// Why a top-level package: a bundle is a policy set's distribution form.
// It sits above policytest and compile (building one runs the linter and
// the suites) and below the composition root and the command line (which
// load one as a layer, and push and pull one), and none of those packages
// is about distribution; putting it in cmd/celguard would keep embedders
// and celguard serve from loading bundles, and putting it in policies
// would make the built-in set depend on the test runner. internal/layering
// ranks it beside store.
package bundle
