package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// schemas are the JSON Schemas `celguard schema` prints, by name.
var schemas = map[string][]byte{
	"policy": policy.SchemaJSON,
	"test":   policytest.SuiteSchemaJSON,
}

func newSchemaCmd(sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "schema [policy|test]",
		Short: "Print the JSON Schema of policy files or of test suites",
		Long: `Schema prints a JSON Schema (draft 2020-12) to stdout: of policy files
(policy, the default) or of *_test.yaml test suites (test). Editors use it
to complete and validate the files as you type; with the YAML language
server (VS Code's YAML extension, and others), save it next to your
policies and name it on the first line of each file:

  # yaml-language-server: $schema=./policy.schema.json

docs/editors.md shows the editor settings.`,
		Example: `  # Save both schemas next to the policies
  celguard schema policy > policies/policy.schema.json
  celguard schema test > policies/suite.schema.json`,
		Args:      cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"policy", "test"},
		RunE: func(_ *cobra.Command, args []string) error {
			name := "policy"
			if len(args) == 1 {
				name = args[0]
			}
			if _, err := sio.stdout.Write(schemas[name]); err != nil {
				fmt.Fprintf(sio.stderr, "celguard schema: %v\n", err)
				return status(exitUsage)
			}
			return nil
		},
	}
}
