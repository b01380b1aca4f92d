package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/cmd/celguard/internal/output"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/replay"
)

// replayParams is what `celguard replay` was asked to do.
type replayParams struct {
	policies      selection
	monitor       bool
	monitorReport bool
	format        string // text, json or markdown
	records       string // the record format, "" to detect
	files         []string
	stdio
}

func newReplayCmd(sio stdio) *cobra.Command {
	var p replayParams
	cmd := &cobra.Command{
		Use:   "replay [flags] FILES...",
		Short: "Decide recorded agent sessions again and report what the policies would have done",
		Long: `Replay reads the records of agent sessions and decides every call in them
again against the policies (chosen as eval chooses them), in order, each
recorded session in a fresh session of its own, so that counters, halts
and session facts replay as they would have. It reads, detecting each
file's format from its first record (or as --records says):

  claude-code   Claude Code's project transcripts (~/.claude/projects/*/*.jsonl)
  codex         Codex's session rollouts (~/.codex/sessions/**/rollout-*.jsonl)
  gemini        Gemini CLI's saved chats (~/.gemini/tmp/*/chats/session-*.jsonl)
  decision-log  celguard's own decision log (--decision-log)
  events        the JSONL event stream celguard eval reads

A directory stands for every *.jsonl file under it. The report counts the
decisions per verdict, per rule and per host, lists every call the
policies would block, ask about or halt (with the rule, the record's
file:line and the reason), and the calls the host actually ran that the
policies would refuse. Arguments are masked as the decision log masks
them. The same records and policies give the same report, byte for byte.

A record a reader does not understand is reported with its file:line and a
stable code (docs/replay.md), and the rest of its file is still read.

--monitor-report reads decision logs written in monitor mode (--monitor,
or policies with mode: monitor) and reports what the monitored rules would
have decided, without deciding anything again: the report of a week in
monitor mode. --monitor replays in monitor mode.

--format text (the default), json (docs/schema/replay.schema.json) or
markdown (a summary for a pull request). On a terminal, a progress line
(files, calls, calls the host ran that the policies refuse) is written to
stderr.

Exit codes: 0 when every record was read and decided; 2 when a record
could not be read (after the report), a file cannot be opened, or the
policies do not compile.`,
		Example: `  # What would the policies in policies/ have done in last month's Claude Code sessions?
  celguard replay --policy policies/ ~/.claude/projects/

  # The same as a Markdown summary for a pull request
  celguard replay --policy policies/ --format markdown ~/.codex/sessions/

  # What did a week in monitor mode show?
  celguard replay --monitor-report decisions.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio, p.files = sio, args
			return status(runReplay(cmd.Context(), p))
		},
	}
	p.policies.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&p.monitor, "monitor", false, "replay in monitor mode: only mandatory rules and the default verdict decide")
	cmd.Flags().BoolVar(&p.monitorReport, "monitor-report", false, "report what the monitored rules of a monitor-mode decision log would have decided, deciding nothing again")
	cmd.Flags().StringVar(&p.format, "format", "text", "text, json or markdown")
	cmd.Flags().StringVar(&p.records, "records", "", "read every file in this format instead of detecting it: claude-code, codex, gemini, decision-log or events")
	return cmd
}

func runReplay(ctx context.Context, p replayParams) int {
	if code := p.check(); code != exitOK {
		return code
	}
	if ctx == nil {
		ctx = context.Background()
	}
	bar := newProgressBar(p.stderr, "celguard replay")
	var rep *replay.Report
	var err error
	if p.monitorReport {
		rep, err = replay.MonitorReport(ctx, p.files, bar.update)
	} else {
		eng, code := replayEngine(ctx, p.policies, p.monitor, p.stderr, "celguard replay")
		if eng == nil {
			return code
		}
		defer eng.Close()
		rep, err = replay.Run(ctx, eng, p.files, replay.Options{Format: replay.Format(p.records), Progress: bar.update})
	}
	bar.done()
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard replay: %v\n", describe(err))
		return exitUsage
	}
	return writeReport(p.stdio, "celguard replay", p.format, rep)
}

// check validates the flags.
func (p replayParams) check() int {
	if !slices.Contains([]string{"text", "json", "markdown"}, p.format) {
		fmt.Fprintf(p.stderr, "celguard replay: --format must be text, json or markdown, not %q\n", p.format)
		return exitUsage
	}
	if p.records != "" && !slices.Contains(replay.Formats, replay.Format(p.records)) {
		fmt.Fprintf(p.stderr, "celguard replay: --records must be one of %v, not %q\n", replay.Formats, p.records)
		return exitUsage
	}
	if p.monitorReport && (!p.policies.empty() || p.monitor || p.records != "") {
		fmt.Fprintln(p.stderr, "celguard replay: --monitor-report decides nothing again: it takes no policies, --monitor or --records")
		return exitUsage
	}
	return exitOK
}

// writeReport writes a replay report in format; the exit code is
// exitUsage when a record was not read.
func writeReport(sio stdio, command, format string, rep *replay.Report) int {
	var err error
	switch format {
	case "json":
		err = replay.WriteJSON(sio.stdout, rep)
	case "markdown":
		err = replay.WriteMarkdown(sio.stdout, rep)
	default:
		err = replay.WriteText(sio.stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(sio.stderr, "%s: cannot write the report: %v\n", command, err)
		return exitUsage
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintf(sio.stderr, "%s: %d records could not be read or decided; the first: %v\n", command, len(rep.Errors), rep.Errors[0])
		return exitUsage
	}
	return exitOK
}

// replayEngine builds the replay engine of a policy selection with the
// composition root; on failure it reports why and returns the exit code.
func replayEngine(ctx context.Context, sel selection, monitor bool, stderr io.Writer, command string) (*replay.Engine, int) {
	return loadReplayEngine(ctx, celguard.Config{Policies: sel.options(), Monitor: monitor}, stderr, command)
}

// loadReplayEngine is replayEngine for a configuration.
func loadReplayEngine(ctx context.Context, cfg celguard.Config, stderr io.Writer, command string) (*replay.Engine, int) {
	eng, err := replay.NewEngine(ctx, cfg)
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		var srcs []policy.Source
		if d, err := cfg.Select(); err == nil {
			srcs = d.Sources
		}
		_ = output.DiagnosticsText(stderr, ds, policy.LinesOf(srcs))
		fmt.Fprintf(stderr, "%s: the policies do not compile: %s\n", command, output.Summary(ds, len(srcs)))
		return nil, exitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", command, describe(err))
		return nil, exitUsage
	}
	return eng, exitOK
}

// progressBar writes a replay's progress to a terminal: one line, written
// over; nothing when w is not a terminal.
type progressBar struct {
	w       io.Writer
	command string
	on      bool
	shown   bool
}

// stderrIsTerminal reports whether w is a terminal; the test binary
// replaces it.
var stderrIsTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f.Fd())
}

func newProgressBar(w io.Writer, command string) *progressBar {
	return &progressBar{w: w, command: command, on: stderrIsTerminal(w)}
}

// update is a replay.Options.Progress; nil when the bar is off.
func (b *progressBar) update(p replay.Progress) {
	if !b.on {
		return
	}
	b.shown = true
	fmt.Fprintf(b.w, "\r%s: files %d/%d, calls %d, flips %d ", b.command, p.Files, p.TotalFiles, p.Calls, p.Flips)
}

// done ends the progress line.
func (b *progressBar) done() {
	if b.shown {
		fmt.Fprint(b.w, "\n")
	}
}
