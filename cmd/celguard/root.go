package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// stdio is where a command reads and writes; tests inject their own.
type stdio struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run runs the celguard command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext is run with a context for the decisions eval makes.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runRoot(ctx, newRootCmdFor(stdio{stdin: stdin, stdout: stdout, stderr: stderr}, args), args, stderr)
}

// runRoot runs args in the command tree root and returns the exit code.
func runRoot(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	// Usage errors from cobra: unknown commands and flags, wrong arguments.
	path := root.Name()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
	return exitUsage
}

// newRootCmd builds the whole command tree.
func newRootCmd(sio stdio) *cobra.Command { return newRootCmdFor(sio, nil) }

// newRootCmdFor builds the command tree args run in. A hook process decides
// one event, on every tool call of every host: when args name the hook
// command, only that command is added, since building the other nineteen
// commands and their flag sets cost about 0.5M instructions and 0.3 MB of
// fresh heap per process (BENCHMARKS.md, issue 26). Its help, errors and
// subcommands are the same either way.
func newRootCmdFor(sio stdio, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "celguard",
		Short: "Decide AI-agent tool calls with CEL policies",
		Long: `celguard decides what an AI agent's tool calls may do. Policies are YAML
files of rules whose conditions are CEL expressions; celguard checks them
(lint) and decides calls against them (eval), before a tool runs and after
it returns.

` + exitCodesHelp,
		Example: `  # Decide one call with the built-in policies
  echo '{"tool": "Bash", "args": {"command": "ls"}}' | celguard eval

  # Check the policies in a directory
  celguard lint policies/`,
		Version:       currentBuild().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(sio.stdin)
	root.SetOut(sio.stdout)
	root.SetErr(sio.stderr)
	root.SetVersionTemplate("celguard {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })

	if len(args) > 0 && args[0] == "hook" {
		root.AddCommand(newHookCmd(sio))
	} else {
		root.AddCommand(newEvalCmd(sio), newLintCmd(sio), newTestCmd(sio), newHookCmd(sio), newPoliciesCmd(sio), newInitCmd(sio), newSchemaCmd(sio), newTrustCmd(sio), newVersionCmd(sio), newApproveCmd(sio), newApprovalsCmd(sio), newDoctorCmd(sio), newServeCmd(sio), newImportCmd(sio), newLearnCmd(sio), newBundleCmd(sio), newMCPCmd(sio), newReplayCmd(sio), newDiffCmd(sio), newHostsCmd(sio))
	}

	// Make cobra's default help and completion commands now, rather than
	// at Execute, so that they get examples like every other command.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  celguard help eval"
		case "completion":
			c.Example = "  celguard completion bash > /etc/bash_completion.d/celguard"
			for _, sh := range c.Commands() {
				sh.Example = completionExamples[sh.Name()]
			}
		}
	}
	return root
}

var completionExamples = map[string]string{
	"bash":       "  source <(celguard completion bash)",
	"zsh":        `  celguard completion zsh > "${fpath[1]}/_celguard"`,
	"fish":       "  celguard completion fish | source",
	"powershell": "  celguard completion powershell | Out-String | Invoke-Expression",
}
