// Package replay decides recorded agent sessions again, against a policy
// set: the hosts' own records (Claude Code's project transcripts, Codex's
// session rollouts, Gemini CLI's saved chats), celguard's decision log and
// the JSONL event stream `celguard eval` reads. It answers "would this
// session have been blocked if...", backtests a candidate policy over a
// month of sessions (Run, Report) and lists the decisions that flip between
// two policy versions (Diff).
//
// A Reader turns one file into the ordered stream of Events the engine
// decides: turns, calls before they run, their results after, and the end
// of each turn, with the call ids, the working directory and the tool
// results the host recorded. The hosts' formats are not documented
// contracts; each reader is derived from records the real hosts wrote in
// hooks/hostse2e (kept in testdata/hosts, with the host versions in
// testdata/hosts/VERSIONS). A line a reader does not understand is an
// *Error with its file:line and a stable code, never skipped silently; the
// reader reads on after it. Files are streamed line by line, each line
// bounded by MaxRecord, so a month of sessions is never held in memory.
//
// An Engine is a policy set's engine built by the composition root
// (celguard.Config.Load) for replay: in memory, with no decision log, no
// telemetry and no judges, its clock and decision ids taken from the
// record, so that the same records and policies give byte-identical
// reports. Every recorded session is decided in a fresh session of its
// own. What a report shows of a call is masked exactly as the decision log
// masks it (decisionlog.NewRecord).
//
// It is a top-level package because replay has no other home: it reads
// the hosts' records (which package hooks, speaking their live protocol,
// never sees) and builds engines through the composition root, so it sits
// above package celguard, beside serve, and below the command line
// (internal/layering); `celguard replay`, `celguard diff` and `celguard
// learn` are its front ends.
package replay
