// Package hostse2e holds no code, only the end-to-end tests that drive the
// real agent hosts (Claude Code, Gemini CLI and Codex, installed from the
// npm registry at pinned versions) against a fake model server on
// 127.0.0.1, with celguard's hooks installed by `celguard hook install`. It
// is a package of its own because the tests need the built celguard binary
// and the hosts' own command lines, not any one package's internals: they
// are the guard against a host update changing what its hooks do.
//
// Every run also replays the transcript each host wrote (package replay)
// and compares its call decisions with those the hooks made live, which
// their decision log recorded; with -update-records the transcripts and
// decision logs are kept as replay/testdata/hosts, the test data of
// replay's readers, with the host versions in its VERSIONS: refresh them
// when a host's tested version changes.
//
// The hosts are installed with `npm install --prefix DIR PKG@VERSION` into a
// cache directory keyed by the versions (CELGUARD_HOSTS_CACHE, else the
// user's cache directory) and reused when present; without npm the tests
// fail with the command to run.
package hostse2e
