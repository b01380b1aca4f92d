package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/learn"
	"github.com/celguard/celguard/policy"
)

func newLearnCmd(sio stdio) *cobra.Command {
	var (
		froms, pols []string
		out, bundle string
	)
	cmd := &cobra.Command{
		Use:   "learn [--from SOURCE[=PATH]]... [-o DIR]",
		Short: "Propose narrow allow rules from the approvals people gave",
		Long: `Learn reads the approvals people gave and proposes the narrowest allow rules
that would have avoided the asks they approved, as a policy and its tests.

Sources (--from, repeatable; without one: grants, and claude when
.claude/settings.local.json exists):
  grants[=DIR]        the rules celguard approve --always wrote and the
                      grants in the hooks' state directory
  approvals=FILE      a decision log (celguard hook --decision-log FILE)
  claude[=FILE]       Claude Code's "don't ask again" rules (permissions.allow)
  replay=FILE         a recorded session (a Claude Code, Codex or Gemini CLI
                      transcript, a decision log, an eval event stream): the
                      calls the policies in force (or --policy) ask about
                      that then ran

A rule generalises only where several approvals agree (one program and
subcommand, options as seen, operands under one directory inside the
workspace; one URL host), and is otherwise the exact call. Rules a
mandatory rule refuses, that lift a risk the bundle recognises, or that
would let a call of the built-in hostile corpus through are dropped, each
with the reason. With -o DIR it writes learned.yaml, learned_test.yaml and
learned_bundle_test.yaml there (lint and test them, review them, then move
what you keep into your policy directory); without it, the policy goes to
standard output. docs/learn.md has the details.`,
		Example: `  celguard learn --from approvals=decisions.jsonl --from claude -o proposed
  celguard lint proposed && celguard test proposed`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts := learn.Options{Bundle: bundle}
			if len(pols) > 0 {
				opts.Replay.Policies.Explicit = pols
			}
			return status(runLearn(c.Context(), sio, froms, out, opts))
		},
	}
	cmd.Flags().StringArrayVar(&froms, "from", nil, "a source of approvals: grants[=DIR], approvals=FILE, claude[=FILE] or replay=FILE (repeatable)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the policy and its two test suites into this directory")
	cmd.Flags().StringVar(&bundle, "bundle", "recommended", "the built-in bundle the rules are checked against and tested with")
	cmd.Flags().StringArrayVar(&pols, "policy", nil, "the policies replayed sessions are decided with (default: the layers in force, as eval)")
	return cmd
}

// runLearn reads the sources, proposes the rules and writes them.
func runLearn(ctx context.Context, sio stdio, froms []string, out string, opts learn.Options) int {
	inputs := learn.DefaultInputs()
	if len(froms) > 0 {
		inputs = nil
	}
	for _, f := range froms {
		in, err := learn.ParseFrom(f)
		if err != nil {
			fmt.Fprintf(sio.stderr, "celguard learn: %v\n", err)
			return exitUsage
		}
		inputs = append(inputs, in)
	}
	res, err := learn.Learn(ctx, inputs, opts)
	if ds := (policy.Diagnostics)(nil); errors.As(err, &ds) {
		printImportNotes(sio, ds)
		return exitUsage
	} else if err != nil {
		fmt.Fprintf(sio.stderr, "celguard learn: %v\n", err)
		return exitUsage
	}
	printImportNotes(sio, res.Notes)
	if out == "" {
		_, err = sio.stdout.Write(res.Policy)
	} else if _, err = learn.Write(out, res); err == nil {
		err = learn.Summary(sio.stdout, res)
	}
	if err != nil {
		fmt.Fprintf(sio.stderr, "celguard learn: %v\n", err)
		return exitUsage
	}
	return exitOK
}
