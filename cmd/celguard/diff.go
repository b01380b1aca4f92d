package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/replay"
)

// diffParams is what `celguard diff` was asked to do.
type diffParams struct {
	base, head string
	effective  bool
	failOn     string
	format     string // text, json, markdown or github
	records    string
	files      []string
	stdio
}

func newDiffCmd(sio stdio) *cobra.Command {
	var p diffParams
	cmd := &cobra.Command{
		Use:   "diff --base REF_OR_DIR --head REF_OR_DIR [flags] [FILES...]",
		Short: "Replay the same records under two policy sets and list every decision that flips",
		Long: `Diff replays the record files (as celguard replay reads them) under two
policy sets, each recorded session in fresh sessions of both, and lists
every decision whose verdict flips (allow → ask, ask → block, ...), grouped
by the rule that decides now and the rule that used to, each group with one
example call (masked as the decision log masks it). It also compares the
two sets rule by rule: the rules added, removed, changed, re-ordered, and
those compile's lint analyses say the head can never let decide
(shadowed_rule, cross_layer_shadowed, false_condition). With no FILES, only
the sets are compared.

--base and --head each name a policy set:

  DIR or FILE    the policy files on disk, as --policy reads them
  REV:PATH       the policy files under PATH at git revision REV of the
                 repository here (HEAD~1:policies/), read with git
  effective      the layered set in force here, as eval and the hooks
                 decide (--effective is --head effective)

--fail-on loosen, tighten or any makes a flip of that kind exit 1, for CI;
--format github writes GitHub Actions annotations on the rules (an error
for a flip --fail-on fails on, a warning otherwise).

Exit codes: 0 when no flip --fail-on names was found; 1 when one was; 2
when a set cannot be read or does not compile, a git revision is missing
(a shallow clone's parent), or a record could not be read.`,
		Example: `  # What would this pull request's policy change do to last week's sessions?
  celguard diff --base HEAD~1:policies/ --head policies/ ~/.claude/projects/

  # Fail CI when the change lets through a call the old policies refused
  celguard diff --base origin/main:policies/ --head policies/ --fail-on loosen --format github records/

  # The candidate policies against what decides here now
  celguard diff --base effective --head candidate/ sessions/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p.stdio, p.files = sio, args
			return status(runDiff(cmd.Context(), p))
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.base, "base", "", "the policy set decisions flip from: a directory or file, REV:PATH, or effective")
	f.StringVar(&p.head, "head", "", "the policy set decisions flip to: a directory or file, REV:PATH, or effective")
	f.BoolVar(&p.effective, "effective", false, "the head is the layered set in force here (--head effective)")
	f.StringVar(&p.failOn, "fail-on", "", "exit 1 when a decision flips this way: loosen, tighten or any")
	f.StringVar(&p.format, "format", "text", "text, json, markdown or github")
	f.StringVar(&p.records, "records", "", "read every file in this format instead of detecting it: claude-code, codex, gemini, decision-log or events")
	return cmd
}

func runDiff(ctx context.Context, p diffParams) int {
	failOn, code := p.check()
	if code != exitOK {
		return code
	}
	if ctx == nil {
		ctx = context.Background()
	}
	base, code := diffEngine(ctx, p.base, p.stdio)
	if base == nil {
		return code
	}
	defer base.Close()
	head, code := diffEngine(ctx, p.head, p.stdio)
	if head == nil {
		return code
	}
	defer head.Close()
	bar := newProgressBar(p.stderr, "celguard diff")
	rep, err := replay.Diff(ctx, base, head, p.files, replay.Options{Format: replay.Format(p.records), Progress: bar.update})
	bar.done()
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard diff: %v\n", describe(err))
		return exitUsage
	}
	return writeDiff(p.stdio, p.format, failOn, rep)
}

// check validates the flags and returns --fail-on.
func (p *diffParams) check() (replay.FailOn, int) {
	if p.effective {
		if p.head != "" && p.head != replay.Effective {
			fmt.Fprintln(p.stderr, "celguard diff: --effective is --head effective: give one or the other")
			return "", exitUsage
		}
		p.head = replay.Effective
	}
	if p.base == "" || p.head == "" {
		fmt.Fprintln(p.stderr, "celguard diff: give both --base and --head (a directory or file, REV:PATH, or effective)")
		return "", exitUsage
	}
	failOn, err := replay.ParseFailOn(p.failOn)
	if err != nil {
		fmt.Fprintf(p.stderr, "celguard diff: %v\n", err)
		return "", exitUsage
	}
	if !slices.Contains([]string{"text", "json", "markdown", "github"}, p.format) {
		fmt.Fprintf(p.stderr, "celguard diff: --format must be text, json, markdown or github, not %q\n", p.format)
		return "", exitUsage
	}
	if p.records != "" && !slices.Contains(replay.Formats, replay.Format(p.records)) {
		fmt.Fprintf(p.stderr, "celguard diff: --records must be one of %v, not %q\n", replay.Formats, p.records)
		return "", exitUsage
	}
	return failOn, exitOK
}

// diffEngine builds the replay engine of one side of a diff.
func diffEngine(ctx context.Context, ref string, sio stdio) (*replay.Engine, int) {
	cfg, err := replay.PolicyRef{Ref: ref}.Config(ctx)
	if err != nil {
		fmt.Fprintf(sio.stderr, "celguard diff: %s: %v\n", ref, err)
		return nil, exitUsage
	}
	return loadReplayEngine(ctx, cfg, sio.stderr, "celguard diff: "+ref)
}

// writeDiff writes the diff report in format; the exit code is
// exitFindings when a flip fails it, exitUsage when a record was not read.
func writeDiff(sio stdio, format string, failOn replay.FailOn, rep *replay.DiffReport) int {
	var err error
	switch format {
	case "json":
		err = replay.WriteJSON(sio.stdout, rep)
	case "markdown":
		err = replay.WriteDiffMarkdown(sio.stdout, rep)
	case "github":
		err = replay.WriteDiffGitHub(sio.stdout, rep, failOn)
	default:
		err = replay.WriteDiffText(sio.stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(sio.stderr, "celguard diff: cannot write the report: %v\n", err)
		return exitUsage
	}
	switch {
	case len(rep.Errors) > 0:
		fmt.Fprintf(sio.stderr, "celguard diff: %d records could not be read; the first: %v\n", len(rep.Errors), rep.Errors[0])
		return exitUsage
	case rep.Fails(failOn):
		fmt.Fprintf(sio.stderr, "celguard diff: decisions flip (--fail-on %s): %d loosened, %d tightened\n", failOn, rep.Loosened, rep.Tightened)
		return exitFindings
	}
	return exitOK
}
