package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/celguard/celguard/hooks"
)

func newHostsCmd(sio stdio) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "hosts [HOST...]",
		Short: "Print what each agent host does with each verdict (the capability matrix)",
		Long: `Hosts prints the host capability matrix: for each agent host and the
version the real-host suite (hooks/hostse2e) ran, what the host does with
each verdict in each phase, as the suite observed it driving the host
against a fake model server:

  exact     the host does what the verdict says
  degraded  the host does something stricter or coarser: BECOMES says what
            (an ask becomes a deny naming an approval request, a redaction
            reaches the model as a tool error)
  none      the verdict has no effect there (the host sends no such event)

The failure phase is what the host does when celguard cannot decide: a
policy that does not compile, a hook binary that is missing. A host the
suite cannot run (Cursor: its CLI is not on a package registry) has a row
whose VERSION says "documented": the suite drove celguard's installed hook
with the events of the host's published hook documentation, and each cell
says what that documentation says the host does with the answer; it is not
a measurement. 'celguard lint --hosts' warns at each rule whose verdict
degrades on a host you name; 'celguard doctor' warns for the hosts
installed.`,
		Example: `  celguard hosts
  celguard hosts codex --format json`,
		ValidArgs: hooks.Hosts(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(runHosts(args, format, sio))
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func runHosts(names []string, format string, sio stdio) int {
	for _, n := range names {
		if _, err := hooks.LookupHost(n); err != nil {
			fmt.Fprintf(sio.stderr, "celguard hosts: %v\n", err)
			return exitUsage
		}
	}
	m := hooks.Capabilities()
	if len(names) > 0 {
		m.Hosts = slices.DeleteFunc(m.Hosts, func(h hooks.HostCapabilities) bool { return !slices.Contains(names, h.Host) })
	}
	switch format {
	case "json":
		enc := json.NewEncoder(sio.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			fmt.Fprintf(sio.stderr, "celguard hosts: %v\n", err)
			return exitUsage
		}
		return exitOK
	case "text":
	default:
		fmt.Fprintf(sio.stderr, "celguard hosts: unknown --format %q: use text or json\n", format)
		return exitUsage
	}
	if err := writeCapabilities(sio.stdout, m, names); err != nil {
		return exitUsage
	}
	return exitOK
}

// writeCapabilities writes m as a table, and names the hosts of names
// (all, when empty) that the real-host suite has not run.
func writeCapabilities(out io.Writer, m hooks.CapabilityMatrix, names []string) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "HOST\tVERSION\tPHASE\tVERDICT\tSUPPORT\tBECOMES")
	run := map[string]bool{}
	var documented []string
	for _, h := range m.Hosts {
		version := h.Version
		if h.Source == hooks.SourceDocumented {
			version = "documented"
			documented = append(documented, h.Host)
		} else {
			run[h.Host] = true
		}
		for _, c := range h.Capabilities {
			becomes := c.Becomes
			if becomes == "" {
				becomes = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Host, version, c.Phase, c.Verdict, c.Support, becomes)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var notRun []string
	for _, h := range hooks.HostTable() {
		if !run[h.Name] && (len(names) == 0 || slices.Contains(names, h.Name)) {
			notRun = append(notRun, h.Name)
		}
	}
	if len(notRun) > 0 {
		note := "their hooks follow the documented protocol"
		if len(documented) > 0 {
			note = "documented: what the host's hook documentation says it does with celguard's answers to its documented events, never a measurement"
		}
		_, err := fmt.Fprintf(out, "\nnot run against the real host: %s (%s; docs/hooks.md)\n", strings.Join(notRun, ", "), note)
		return err
	}
	return nil
}
