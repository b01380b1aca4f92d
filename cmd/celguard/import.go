package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/policy"
)

func newImportCmd(sio stdio) *cobra.Command {
	var out, geminiMode, geminiTier string
	var formats []string
	for _, f := range importer.Formats() {
		formats = append(formats, string(f))
	}
	cmd := &cobra.Command{
		Use:   "import FORMAT FILE...",
		Short: "Convert another agent's permission rules into a celguard policy",
		Long: `Import reads the rules another agent already enforces and writes a celguard
policy that decides as they do, with a test suite generated from the
source's own examples and a representative call for every rule.

Formats: ` + strings.Join(formats, ", ") + `. docs/import.md lists, per format, what is
imported exactly, what is imported as a stricter rule and what is refused.

Without -o the policy goes to standard output. With -o OUT.yaml it is
written there and its suite to OUT_test.yaml beside it (run it with
celguard test). Notes (a construct imported as a stricter rule, something
the source itself ignores) go to standard error at the source's
file:line:col. A source that cannot be imported prints its errors and
exits 1, writing nothing. The output is deterministic and its header names
every source file with its SHA-256.`,
		Example: `  # Codex's rules, as a policy and its test suite
  celguard import codex ~/.codex/rules/default.rules -o codex.yaml
  celguard test codex_test.yaml

  # Gemini CLI's user and admin policies, as its autoEdit mode decides
  celguard import gemini --gemini-mode autoEdit ~/.gemini/policies/*.toml /etc/gemini-cli/policies/*.toml

  # BitCode guards (later files override earlier ones of the same id)
  celguard import bitcode ~/.bitcode/guards/*.yaml .bitcode/guards/*.md`,
		Args:      cobra.MinimumNArgs(2),
		ValidArgs: formats,
		RunE: func(_ *cobra.Command, args []string) error {
			var files []importer.File
			for _, p := range args[1:] {
				b, err := readLimited(p, importer.MaxFileSize)
				if err != nil {
					fmt.Fprintf(sio.stderr, "celguard import: %v\n", err)
					return status(exitUsage)
				}
				files = append(files, importer.File{Name: filepath.ToSlash(p), Data: b})
			}
			opts := importer.Options{GeminiMode: geminiMode, GeminiTier: geminiTier}
			if args[0] != string(importer.Gemini) && (geminiMode != "" || geminiTier != "") {
				fmt.Fprintf(sio.stderr, "celguard import: --gemini-mode and --gemini-tier are for the gemini format\n")
				return status(exitUsage)
			}
			if home, err := os.UserHomeDir(); err == nil {
				opts.HomeDir = filepath.ToSlash(home)
			}
			suitePath := ""
			if out != "" {
				ext := filepath.Ext(out)
				if ext != ".yaml" && ext != ".yml" {
					fmt.Fprintf(sio.stderr, "celguard import: -o %s: the policy file must end in .yaml or .yml\n", out)
					return status(exitUsage)
				}
				opts.PolicyFile = filepath.Base(out)
				suitePath = strings.TrimSuffix(out, ext) + "_test" + ext
			}
			res, err := importer.Import(importer.Format(args[0]), files, opts)
			if err != nil {
				var ds policy.Diagnostics
				if errors.As(err, &ds) {
					printImportNotes(sio, ds)
					return status(exitFindings)
				}
				fmt.Fprintf(sio.stderr, "celguard import: %v\n", err)
				return status(exitUsage)
			}
			printImportNotes(sio, res.Notes)
			if out == "" {
				if _, err := sio.stdout.Write(res.Policy); err != nil {
					return status(exitUsage)
				}
				return nil
			}
			for _, w := range []struct {
				path string
				data []byte
			}{{out, res.Policy}, {suitePath, res.Suite}} {
				if err := atomicfile.Write(w.path, w.data, 0o644); err != nil {
					fmt.Fprintf(sio.stderr, "celguard import: %v\n", err)
					return status(exitUsage)
				}
				fmt.Fprintf(sio.stderr, "wrote %s\n", w.path)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the policy to this .yaml file and its suite to the _test.yaml beside it")
	cmd.Flags().StringVar(&geminiMode, "gemini-mode", "", "gemini: the approval mode to decide as (default, autoEdit, yolo, plan; default: default)")
	cmd.Flags().StringVar(&geminiTier, "gemini-tier", "", "gemini: read every file in this tier (default, extension, workspace, user, admin) instead of the tier of its place")
	return cmd
}

func printImportNotes(sio stdio, ds policy.Diagnostics) {
	for _, d := range ds {
		fmt.Fprintf(sio.stderr, "%s: %s: %s: %s\n", d.Pos, d.Severity, d.Code, d.Message)
	}
}

// readLimited reads a file of at most limit bytes.
func readLimited(p string, limit int) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: name the files", p)
	}
	if st.Size() > int64(limit) {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return os.ReadFile(p)
}
