package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/spf13/cobra"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/bundle"
)

// The bundle commands are flag parsing over package bundle: build, sign,
// verify, inspect, push and pull a signed policy bundle (docs/bundles.md).

func newBundleCmd(sio stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Build, sign, verify, inspect, push and pull signed policy bundles",
		Long: `A bundle is a policy set a security team rolls out to every machine: the
policies and their test suites, the lint result and cost proofs, and a
manifest (name, version, a serial that only grows, the layer it is meant
for), signed with keys the organisation controls (a DSSE envelope holding an
in-toto statement) and pushed to an OCI registry or served over HTTPS.
Machines pull it on an interval, verify it against the configured public keys
and a threshold, refuse a serial lower than the one in force, and keep the
last good bundle when the source is unreachable. docs/bundles.md walks
through key creation, rollout and rotation, and states the threat model.

Exit codes: 0 success; 1 the bundle was refused (lint or tests failed at
build, a signature or serial refused at verify or pull, the source
unreachable); 2 usage or I/O error.`,
		Example: `  celguard bundle keygen --out keys/ci
  celguard bundle build policies/ --name acme --version v1 --serial 1 --layer admin -o acme.tar.gz
  celguard bundle sign acme.tar.gz --key keys/ci.key
  celguard bundle push acme.tar.gz oci://registry.example.com/acme/policies:stable
  celguard bundle pull oci://registry.example.com/acme/policies:stable --name acme --pub keys/ci.pub`,
	}
	cmd.AddCommand(newBundleKeygenCmd(sio), newBundleBuildCmd(sio), newBundleSignCmd(sio), newBundleVerifyCmd(sio),
		newBundleInspectCmd(sio), newBundlePushCmd(sio), newBundlePullCmd(sio))
	return cmd
}

// bundleFail prints err with its code and returns the exit code: 1 for a
// refusal (an error with a bundle code), 2 otherwise.
func bundleFail(sio stdio, cmd string, err error) int {
	fmt.Fprintf(sio.stderr, "celguard bundle %s: %v\n", cmd, err)
	var be *bundle.BuildError
	if errors.As(err, &be) {
		for _, d := range be.Diagnostics {
			fmt.Fprintf(sio.stderr, "  %v\n", d)
		}
		if be.Report != nil {
			for _, s := range be.Report.Suites {
				if s.Error != "" {
					fmt.Fprintf(sio.stderr, "  %s: %s\n", s.File, s.Error)
				}
				for _, c := range s.Cases {
					if !c.Pass {
						fmt.Fprintf(sio.stderr, "  %s:%d: %s: %s\n", s.File, c.Line, c.Name, strings.Join(c.Failures, "; "))
					}
				}
			}
		}
	}
	if code := bundle.CodeOf(err); code != "" && code != bundle.CodeKey {
		return exitFindings
	}
	return exitUsage
}

func envelopePath(archive, flag string) string {
	if flag != "" {
		return flag
	}
	return archive + ".dsse.json"
}

func newBundleKeygenCmd(sio stdio) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX",
		Short: "Write a new Ed25519 signing key (PREFIX.key) and its public key (PREFIX.pub)",
		Long: `Keygen writes a new Ed25519 key pair in PEM: PREFIX.key (PKCS#8, mode 0600;
keep it offline or in your signing system) and PREFIX.pub (PKIX; give it to
every machine). It refuses to overwrite a file. Any Ed25519, ECDSA P-256 or
RSA PEM key made another way (openssl genpkey, a KMS export) works too.`,
		Example: `  celguard bundle keygen --out keys/security-team-2026`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				fmt.Fprintln(sio.stderr, "celguard bundle keygen: --out PREFIX is required")
				return status(exitUsage)
			}
			priv, pub, err := bundle.GenerateKey()
			if err == nil {
				err = writeNew(out+".key", priv, 0o600)
			}
			if err == nil {
				err = writeNew(out+".pub", pub, 0o644)
			}
			if err != nil {
				return status(bundleFail(sio, "keygen", err))
			}
			k, _ := bundle.ParseKey(pub)
			fmt.Fprintf(sio.stdout, "wrote %s.key and %s.pub (key id %s)\n", out, out, k.ID())
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "path prefix of the key files")
	return cmd
}

func writeNew(name string, data []byte, perm os.FileMode) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func newBundleBuildCmd(sio stdio) *cobra.Command {
	var o bundle.BuildOptions
	var out string
	cmd := &cobra.Command{
		Use:   "build DIR --name NAME --version V --serial N --layer admin|user [-o FILE]",
		Short: "Build a bundle of the policies in DIR; refuse a set that does not lint clean or whose suites fail",
		Long: `Build reads every .yaml and .yml file below DIR (policies, their *_test.yaml
suites and what the suites read; hidden directories are skipped), compiles
and lints the policies as they will be loaded (in the layer named, with the
built-in tool classes) and refuses the set when a diagnostic is an error (as
celguard lint --fail-on error), runs every suite and refuses the set when a
case fails, and writes the bundle: a gzip tar of the files, lint.json,
proofs.json (each rule's cost proof) and manifest.json. The same DIR and
flags give the same bytes. The serial must grow with every release: machines
refuse a lower serial than the one in force.`,
		Example: `  celguard bundle build policies/ --name acme --version v1.2.0 --serial 12 --layer admin -o acme.tar.gz`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.CelguardVersion = currentBuild().Version
			b, err := bundle.Build(cmd.Context(), args[0], o)
			if err != nil {
				return status(bundleFail(sio, "build", err))
			}
			if out == "" {
				out = o.Name + ".tar.gz"
			}
			if err := os.WriteFile(out, b.Archive, 0o644); err != nil {
				return status(bundleFail(sio, "build", err))
			}
			m := b.Manifest
			fmt.Fprintf(sio.stdout, "built %s: %s %s serial %d for the %s layer, %d files, %d suites (%d cases) passed, %d lint warnings, sha256 %s\n",
				out, m.Name, m.Version, m.Serial, m.Layer, len(m.Files), m.Tests.Suites, m.Tests.Cases, m.Lint.Warnings, b.ArchiveDigest())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "bundle name ([a-z0-9][a-z0-9._-]*)")
	f.StringVar(&o.Version, "version", "", "version label (v1.2.0, 2026-11-26...)")
	f.Uint64Var(&o.Serial, "serial", 0, "serial, higher than every earlier bundle of this name")
	f.StringVar(&o.Layer, "layer", "admin", "layer the bundle is meant for: admin or user")
	f.StringVarP(&out, "output", "o", "", "archive to write (default NAME.tar.gz)")
	return cmd
}

func newBundleSignCmd(sio stdio) *cobra.Command {
	var keys []string
	var envFile string
	cmd := &cobra.Command{
		Use:   "sign FILE --key KEY...",
		Short: "Sign a bundle, adding the signatures to its envelope (FILE.dsse.json)",
		Long: `Sign signs the bundle with each private key given and writes the DSSE
envelope to FILE.dsse.json (--envelope to choose). When the envelope exists
already, for this bundle, the new signatures are added to it: each key holder
signs in turn toward a threshold. An envelope of another bundle is refused.`,
		Example: `  celguard bundle sign acme.tar.gz --key keys/alice.key
  celguard bundle sign acme.tar.gz --key keys/bob.key   # a second signature`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(keys) == 0 {
				fmt.Fprintln(sio.stderr, "celguard bundle sign: --key is required")
				return status(exitUsage)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return status(bundleFail(sio, "sign", err))
			}
			b, err := bundle.Read(data, bundle.Limits{})
			if err != nil {
				return status(bundleFail(sio, "sign", err))
			}
			var ks []*bundle.Key
			for _, k := range keys {
				key, err := bundle.LoadKey(k)
				if err != nil {
					return status(bundleFail(sio, "sign", err))
				}
				ks = append(ks, key)
			}
			ef := envelopePath(args[0], envFile)
			prevData, err := os.ReadFile(ef)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return status(bundleFail(sio, "sign", err))
			}
			var prev *dsse.Envelope
			if prevData != nil {
				if prev, err = bundle.ParseEnvelope(prevData); err != nil {
					return status(bundleFail(sio, "sign", err))
				}
			}
			env, err := bundle.Sign(cmd.Context(), b, prev, ks...)
			if err != nil {
				return status(bundleFail(sio, "sign", err))
			}
			out, err := json.MarshalIndent(env, "", "  ")
			if err == nil {
				err = os.WriteFile(ef, append(out, '\n'), 0o644)
			}
			if err != nil {
				return status(bundleFail(sio, "sign", err))
			}
			fmt.Fprintf(sio.stdout, "signed %s %s (serial %d): %s holds %d signatures\n", b.Manifest.Name, b.Manifest.Version, b.Manifest.Serial, ef, len(env.Signatures))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&keys, "key", nil, "private key file (PEM); repeat to sign with several")
	cmd.Flags().StringVar(&envFile, "envelope", "", "envelope file (default FILE.dsse.json)")
	return cmd
}

// trustFlags are the verification flags of verify and pull.
type trustFlags struct {
	pubs      []string
	threshold int
}

func (t *trustFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&t.pubs, "pub", nil, "public key file (PEM) a signature may be made with; repeat for several")
	cmd.Flags().IntVar(&t.threshold, "threshold", 1, "how many of the --pub keys must have signed")
}

func (t *trustFlags) policy() (*bundle.TrustPolicy, error) {
	if len(t.pubs) == 0 {
		return nil, fmt.Errorf("--pub is required: name the public keys bundles must be signed with")
	}
	return bundle.LoadTrustPolicy(t.threshold, t.pubs...)
}

func newBundleVerifyCmd(sio stdio) *cobra.Command {
	var tf trustFlags
	var envFile string
	cmd := &cobra.Command{
		Use:   "verify FILE --pub KEY... [--threshold N]",
		Short: "Check a bundle's archive and that enough of the given keys signed it",
		Long: `Verify reads the bundle (within its size limits, every file against the
manifest) and its envelope (FILE.dsse.json, or --envelope), and succeeds when
at least --threshold of the --pub keys signed a statement naming this very
archive and manifest. It exits 1 when the bundle is refused, with the
refusal's code (bundle_unsigned, bundle_signature_invalid,
bundle_subject_mismatch...).`,
		Example: `  celguard bundle verify acme.tar.gz --pub keys/alice.pub --pub keys/bob.pub --threshold 2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tp, err := tf.policy()
			if err != nil {
				return status(bundleFail(sio, "verify", err))
			}
			archive, err := os.ReadFile(args[0])
			if err != nil {
				return status(bundleFail(sio, "verify", err))
			}
			env, err := os.ReadFile(envelopePath(args[0], envFile))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return status(bundleFail(sio, "verify", err))
			}
			v, err := bundle.Verify(cmd.Context(), archive, env, tp, bundle.Limits{})
			if err != nil {
				return status(bundleFail(sio, "verify", err))
			}
			fmt.Fprintf(sio.stdout, "verified %s, signed by %s\n", v.Manifest.Ref(), strings.Join(v.KeyIDs, ", "))
			return nil
		},
	}
	tf.add(cmd)
	cmd.Flags().StringVar(&envFile, "envelope", "", "envelope file (default FILE.dsse.json)")
	return cmd
}

func newBundleInspectCmd(sio stdio) *cobra.Command {
	var format, extract, envFile string
	cmd := &cobra.Command{
		Use:   "inspect FILE [--format text|json] [--extract DIR]",
		Short: "Print a bundle's manifest, files, checks and signatures",
		Long: `Inspect reads the bundle (within its size limits, every file against the
manifest) and prints its manifest, its files, the lint and test summary, the
cost proofs and the key IDs of the signatures in its envelope (not verified:
celguard bundle verify does that). --extract writes its files into DIR, which
must be empty; no path can land outside it.`,
		Example: `  celguard bundle inspect acme.tar.gz
  celguard bundle inspect acme.tar.gz --format json
  celguard bundle inspect acme.tar.gz --extract /tmp/acme`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return status(bundleFail(sio, "inspect", err))
			}
			b, err := bundle.Read(data, bundle.Limits{})
			if err != nil {
				return status(bundleFail(sio, "inspect", err))
			}
			var keyIDs []string
			if env, err := os.ReadFile(envelopePath(args[0], envFile)); err == nil {
				if e, err := bundle.ParseEnvelope(env); err == nil {
					for _, s := range e.Signatures {
						keyIDs = append(keyIDs, s.KeyID)
					}
				}
			}
			var proofs []bundle.Proof
			_ = json.Unmarshal(b.Files["proofs.json"], &proofs)
			switch format {
			case "json":
				out, _ := json.MarshalIndent(struct {
					Manifest   bundle.Manifest `json:"manifest"`
					SHA256     string          `json:"sha256"`
					Proofs     []bundle.Proof  `json:"proofs"`
					Signatures []string        `json:"signatures"`
				}{b.Manifest, b.ArchiveDigest(), proofs, keyIDs}, "", "  ")
				fmt.Fprintln(sio.stdout, string(out))
			case "text":
				m := b.Manifest
				fmt.Fprintf(sio.stdout, "bundle   %s\nversion  %s\nserial   %d\nlayer    %s\ncreated  %s\nbuilt by celguard %s\ndigest   %s\nsha256   %s\n",
					m.Name, m.Version, m.Serial, m.Layer, m.Created.Format(time.RFC3339), m.CelguardVersion, m.Digest, b.ArchiveDigest())
				fmt.Fprintf(sio.stdout, "lint     %d warnings, %d info (no errors)\ntests    %d suites, %d cases passed\nproofs   %d rule conditions\n", m.Lint.Warnings, m.Lint.Info, m.Tests.Suites, m.Tests.Cases, len(proofs))
				fmt.Fprintln(sio.stdout, "files")
				for _, f := range m.Files {
					fmt.Fprintf(sio.stdout, "  %-40s %7d  %s\n", f.Path, f.Size, f.SHA256)
				}
				if len(keyIDs) == 0 {
					fmt.Fprintln(sio.stdout, "signatures: none")
				} else {
					fmt.Fprintf(sio.stdout, "signatures (not verified): %s\n", strings.Join(keyIDs, ", "))
				}
			default:
				fmt.Fprintf(sio.stderr, "celguard bundle inspect: unknown --format %q: use text or json\n", format)
				return status(exitUsage)
			}
			if extract != "" {
				if err := bundle.Unpack(b, extract); err != nil {
					return status(bundleFail(sio, "inspect", err))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&extract, "extract", "", "write the bundle's files into this empty directory")
	cmd.Flags().StringVar(&envFile, "envelope", "", "envelope file (default FILE.dsse.json)")
	return cmd
}

// sourceFlags are how push and pull reach a source.
type sourceFlags struct {
	plainHTTP bool
	caFile    string
}

func (s *sourceFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&s.plainHTTP, "plain-http", false, "talk HTTP, not HTTPS, to a registry on loopback (a local test registry)")
	cmd.Flags().StringVar(&s.caFile, "ca-file", "", "PEM certificates to trust for the source's TLS, besides the system's")
}

func (s *sourceFlags) source(ref string) (bundle.Source, error) {
	client, err := bundle.HTTPClient(s.caFile)
	if err != nil {
		return nil, err
	}
	return bundle.ParseSource(ref, client, s.plainHTTP)
}

func newBundlePushCmd(sio stdio) *cobra.Command {
	var sf sourceFlags
	var envFile string
	var tags []string
	cmd := &cobra.Command{
		Use:   "push FILE oci://HOST/REPO:TAG",
		Short: "Push a signed bundle to an OCI registry as one artifact with its signature",
		Long: `Push uploads the bundle and its envelope (FILE.dsse.json, or --envelope) to
the registry as one OCI artifact (artifact type
application/vnd.celguard.bundle.v1, two layers: the archive and the DSSE
envelope) and points TAG, and every --tag, at it. It refuses an archive
that does not read or has no envelope: an unsigned bundle would be refused
by every machine anyway. Credentials are not read yet: push to a registry
that accepts the pusher's network (a registry behind a proxy that
authenticates).`,
		Example: `  celguard bundle push acme.tar.gz oci://registry.example.com/acme/policies:stable --tag serial-12`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			archive, err := os.ReadFile(args[0])
			if err != nil {
				return status(bundleFail(sio, "push", err))
			}
			b, err := bundle.Read(archive, bundle.Limits{})
			if err != nil {
				return status(bundleFail(sio, "push", err))
			}
			env, err := os.ReadFile(envelopePath(args[0], envFile))
			if err != nil {
				return status(bundleFail(sio, "push", fmt.Errorf("the bundle is not signed (%w): run celguard bundle sign first", err)))
			}
			if _, err := bundle.ParseEnvelope(env); err != nil {
				return status(bundleFail(sio, "push", err))
			}
			src, err := sf.source(args[1])
			if err != nil {
				return status(bundleFail(sio, "push", err))
			}
			oci, ok := src.(*bundle.OCI)
			if !ok {
				fmt.Fprintln(sio.stderr, "celguard bundle push: push to an oci:// reference; serve an https:// source with any web server")
				return status(exitUsage)
			}
			digest, err := oci.Push(cmd.Context(), archive, env, tags...)
			if err != nil {
				return status(bundleFail(sio, "push", err))
			}
			fmt.Fprintf(sio.stdout, "pushed %s to %s (%s)\n", b.Manifest.Ref(), oci, digest)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&envFile, "envelope", "", "envelope file (default FILE.dsse.json)")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "more tags to point at the artifact")
	return cmd
}

func newBundlePullCmd(sio stdio) *cobra.Command {
	var sf sourceFlags
	var tf trustFlags
	var name, layer, stateDir, format string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "pull [SOURCE --name NAME --pub KEY...] [--state-dir DIR] [--interval D]",
		Short: "Fetch bundles, verify them and keep them as the ones in force (for cron, or --interval)",
		Long: `Pull without SOURCE pulls every bundle the bundles files configure (the
user's bundles.json in their celguard configuration directory and the
administrator's /etc/celguard/bundles.json: docs/bundles.md), each into its
own state directory, and prints each one's status; eval, hook and serve
decide with what is in force there. This is what a cron job runs.

With SOURCE, pull fetches that one bundle (oci://HOST/REPO:TAG, or https://URL with
its envelope at URL.dsse.json), verifies it against the --pub keys and
--threshold, checks its name and layer, refuses a serial lower than the one
in force (or another archive with the same serial), and on success keeps it
in --state-dir as the bundle in force. A refused bundle is never kept; an
unreachable source leaves the last good bundle in force. It prints the
store's status (--format json for a machine) and exits 0 when the bundle in
force is the source's, 1 when the source's was refused or could not be
reached.

Run it from cron, or with --interval to pull forever (each failure is
printed; the last good bundle stays). The state directory of an admin
bundle must be writable by root only (the default for --layer admin is
/var/lib/celguard/bundles); celguard serve and hook read the same store.`,
		Example: `  # crontab: every 10 minutes, every configured bundle
  */10 * * * * celguard bundle pull
  # one bundle, named on the command line
  celguard bundle pull oci://registry.example.com/acme/policies:stable --name acme --pub /etc/celguard/keys/ci.pub`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return status(pullConfigured(cmd.Context(), sio, format, interval))
			}
			tp, err := tf.policy()
			if err != nil {
				return status(bundleFail(sio, "pull", err))
			}
			if !bundle.ValidName(name) {
				fmt.Fprintf(sio.stderr, "celguard bundle pull: --name %q is not a bundle name\n", name)
				return status(exitUsage)
			}
			src, err := sf.source(args[0])
			if err != nil {
				return status(bundleFail(sio, "pull", err))
			}
			if stateDir == "" {
				if stateDir, err = bundle.DefaultStateDir(layer); err != nil {
					return status(bundleFail(sio, "pull", err))
				}
			}
			st := &bundle.Store{Dir: stateDir, Name: name, Layer: layer, Trust: tp}
			once := func(ctx context.Context) int {
				_, err := st.Update(ctx, src)
				s := st.Status(ctx)
				if format == "json" {
					out, _ := json.Marshal(s)
					fmt.Fprintln(sio.stdout, string(out))
				} else if s.InForce != nil {
					fmt.Fprintf(sio.stdout, "in force: %s from %s\n", *s.InForce, s.Source)
				} else {
					fmt.Fprintf(sio.stdout, "in force: none (%s)\n", s.Error)
				}
				if err != nil {
					return bundleFail(sio, "pull", err)
				}
				return exitOK
			}
			if interval <= 0 {
				return status(once(cmd.Context()))
			}
			for {
				once(cmd.Context())
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	sf.add(cmd)
	tf.add(cmd)
	cmd.Flags().StringVar(&name, "name", "", "the bundle's name (a bundle of another name is refused)")
	cmd.Flags().StringVar(&layer, "layer", "admin", "the layer the bundle must be meant for: admin or user")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "where the bundle in force is kept (default: /var/lib/celguard/bundles for admin, $XDG_STATE_HOME/celguard/bundles for user)")
	cmd.Flags().StringVar(&format, "format", "text", "status output: text or json")
	cmd.Flags().DurationVar(&interval, "interval", 0, "pull again after this long, forever (0: once)")
	return cmd
}

// doctorBundles reports the configured policy bundles (the user's and the
// administrator's bundles.json) under doctor's checks: exitFindings when
// one blocks every call or its configuration cannot be read.
func doctorBundles(sio stdio) int {
	bs, err := celguard.Config{}.BundleStatuses(context.Background())
	if err != nil {
		fmt.Fprintf(sio.stdout, "policy bundles\n  fail  %v\n", err)
		return exitFindings
	}
	if len(bs) == 0 {
		return exitOK
	}
	code := exitOK
	fmt.Fprintln(sio.stdout, "policy bundles")
	for _, b := range bs {
		level, msg := "ok", ""
		switch {
		case b.Blocked:
			level, msg, code = "fail", fmt.Sprintf("%s (%s layer): every call is blocked: %s", b.Name, b.Layer, b.Error), exitFindings
			if b.Error == "" && b.Refused != nil {
				msg = fmt.Sprintf("%s (%s layer): every call is blocked after a refused bundle (on_refused: block): %s", b.Name, b.Layer, b.Refused.Message)
			}
		case b.InForce == nil:
			level, msg = "warn", fmt.Sprintf("%s (%s layer): no bundle in force, the layer decides without it: %s", b.Name, b.Layer, b.Error)
		default:
			msg = fmt.Sprintf("%s (%s layer): %s in force from %s, checked %s", b.Name, b.Layer, *b.InForce, b.Source, b.Checked.Format(time.RFC3339))
		}
		fmt.Fprintf(sio.stdout, "  %-4s  %s\n", level, msg)
		if b.Refused != nil && !b.Blocked {
			fmt.Fprintf(sio.stdout, "  warn  %s: the source offered a refused bundle: %s\n", b.Name, b.Refused.Message)
		}
		if b.Unreachable != nil {
			fmt.Fprintf(sio.stdout, "  warn  %s: the source is unreachable since %s: %s\n", b.Name, b.Unreachable.At.Format(time.RFC3339), b.Unreachable.Message)
		}
	}
	return code
}

// pullConfigured pulls every configured bundle (celguard.Config's bundles
// files), once or every interval, printing each one's status.
func pullConfigured(ctx context.Context, sio stdio, format string, interval time.Duration) int {
	cfg := celguard.Config{}
	once := func() int {
		errs := cfg.PullBundles(ctx)
		if err := errs[""]; err != nil {
			return bundleFail(sio, "pull", err)
		}
		bs, err := cfg.BundleStatuses(ctx)
		if err != nil {
			return bundleFail(sio, "pull", err)
		}
		if len(bs) == 0 {
			fmt.Fprintln(sio.stderr, "celguard bundle pull: no bundle is configured: write a bundles.json (docs/bundles.md), or name a SOURCE")
			return exitUsage
		}
		code := exitOK
		for _, b := range bs {
			if format == "json" {
				out, _ := json.Marshal(b)
				fmt.Fprintln(sio.stdout, string(out))
			} else if b.InForce != nil {
				fmt.Fprintf(sio.stdout, "%s (%s layer): in force: %s from %s\n", b.Name, b.Layer, *b.InForce, b.Source)
			} else {
				fmt.Fprintf(sio.stdout, "%s (%s layer): in force: none (%s)\n", b.Name, b.Layer, b.Error)
			}
			if err := errs[b.Name]; err != nil {
				code = bundleFail(sio, "pull", fmt.Errorf("%s: %w", b.Name, err))
			}
		}
		return code
	}
	if interval <= 0 {
		return once()
	}
	for {
		once()
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(interval):
		}
	}
}
