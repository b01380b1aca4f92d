package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/telemetry"
)

// decisionOptions are the flags of eval and hook that change what is done
// with each decision: the decision log and monitor mode (--monitor).
type decisionOptions struct {
	logPath     string
	logMaxBytes int64
	logSync     bool
	monitor     bool

	// agentHost is the agent host deciding for (the hook's HOST), for
	// telemetry's who and where.
	agentHost string
	// otlpEndpoint and otlpProtocol are serve's --otlp-endpoint and
	// --otlp-protocol; flushTimeout bounds the export's flush at exit.
	otlpEndpoint string
	otlpProtocol string
	flushTimeout time.Duration
}

// addTelemetryFlags declares serve's --otlp-endpoint and --otlp-protocol.
func (o *decisionOptions) addTelemetryFlags(f *pflag.FlagSet) {
	f.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "send every decision to this OpenTelemetry collector over OTLP (http://HOST:PORT, https://...): spans, logs and metrics (docs/telemetry.md); CELGUARD_TELEMETRY=otlp with OTEL_EXPORTER_OTLP_ENDPOINT does the same")
	f.StringVar(&o.otlpProtocol, "otlp-protocol", "", "the OTLP protocol: grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
}

// addFlags declares --decision-log, --decision-log-max-bytes and
// --decision-log-sync.
func (o *decisionOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.logPath, "decision-log", "", "append every decision to this file as one JSON line, arguments masked (docs/decision-log.md)")
	f.Int64Var(&o.logMaxBytes, "decision-log-max-bytes", 64<<20, "rotate the decision log to FILE.1 past this size (negative: never)")
	f.BoolVar(&o.logSync, "decision-log-sync", false, "fsync the decision log after every line (durable across a machine crash, slower)")
	f.BoolVar(&o.monitor, "monitor", false, "monitor mode: rules are evaluated and reported (\"monitored\") but only mandatory rules and the default verdict decide")
}

// args are the flags that give o, as a command line would give them.
func (o decisionOptions) args() []string {
	var out []string
	if o.monitor {
		out = append(out, "--monitor")
	}
	if o.logPath != "" {
		// The host runs the hook from its own directory.
		path := o.logPath
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		out = append(out, "--decision-log", path)
		if o.logMaxBytes != 64<<20 {
			out = append(out, "--decision-log-max-bytes", fmt.Sprint(o.logMaxBytes))
		}
		if o.logSync {
			out = append(out, "--decision-log-sync")
		}
	}
	return out
}

// configure sets the decision log and monitor mode o asks for in cfg. A
// decision the log cannot record is refused (decision_log_failed): an
// audit trail with holes is not one.
func (o decisionOptions) configure(cfg *celguard.Config) error {
	if o.logPath != "" {
		if o.logMaxBytes == 0 {
			return fmt.Errorf("--decision-log-max-bytes must not be 0 (negative never rotates)")
		}
		who := o.who()
		cfg.DecisionLog = &celguard.DecisionLog{Path: o.logPath, Options: decisionlog.FileSinkOptions{MaxBytes: o.logMaxBytes, Sync: o.logSync, Who: &who}}
	}
	cfg.Monitor = o.monitor
	tc := telemetry.FromEnv(nil)
	if o.otlpEndpoint != "" || o.otlpProtocol != "" {
		if tc == nil {
			tc = &telemetry.Config{TraceParent: os.Getenv("TRACEPARENT"), TraceState: os.Getenv("TRACESTATE")}
		}
		tc.Endpoint, tc.Protocol = o.otlpEndpoint, o.otlpProtocol
	}
	if tc != nil {
		tc.Who = o.who()
		tc.FlushTimeout = o.flushTimeout
		cfg.Telemetry = tc
	}
	return nil
}

// who is who decides where, for the decision log and telemetry: this
// process's repository, machine and user, the agent host deciding for
// (the hook's HOST) and CELGUARD_AGENT_VERSION.
func (o decisionOptions) who() telemetry.Who {
	return telemetry.WhoAmI("", o.agentHost, os.Getenv("CELGUARD_AGENT_VERSION"))
}

// warnings say what --monitor leaves enforcing in set: its mandatory
// policies, which cannot be monitored away.
func (o decisionOptions) warnings(set *compile.PolicySet) []string {
	if !o.monitor {
		return nil
	}
	var names []string
	for _, r := range set.Rules() {
		if r.Mandatory && !slices.Contains(names, r.Policy.Name) {
			names = append(names, r.Policy.Name)
		}
	}
	if len(names) == 0 {
		return []string{"--monitor: every rule is monitored; only the default verdict decides"}
	}
	return []string{"--monitor: the mandatory policies keep enforcing (they cannot be monitored away): " + strings.Join(names, ", ")}
}
