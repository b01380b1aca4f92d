package bundle

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	ita "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// The signed form of a bundle is a DSSE envelope (EnvelopeMediaType) whose
// payload is an in-toto Statement v1: its one subject is the archive (name
// NAME.tar.gz, its SHA-256), its predicate the manifest (PredicateType).
// DSSE signs the payload type with the payload (PAE), so a signature over a
// statement cannot be replayed as anything else; in-toto's statement is the
// field's standard way to say "this digest has these properties", and both
// have maintained Go libraries (go-securesystemslib, in-toto attestation).
// The envelope's keyid is the securesystemslib key ID: the SHA-256 of the
// canonical JSON of the public key.
const (
	// PredicateType is the statement's predicate type.
	PredicateType = "https://celguard.dev/bundle/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// EnvelopeMediaType is the media type of the envelope file (the OCI
	// layer's).
	EnvelopeMediaType = "application/vnd.dsse.envelope.v1+json"
	// maxEnvelope bounds an envelope file.
	maxEnvelope = 1 << 20
)

// Key is a signing or verification key: an Ed25519, ECDSA P-256 or RSA
// key in PEM (PKCS#8 private, PKIX public), as securesystemslib loads it.
type Key struct {
	sv  dsse.SignerVerifier
	id  string
	pem []byte
}

// ID is the key's securesystemslib key ID (hex SHA-256).
func (k *Key) ID() string { return k.id }

// ParseKey parses a PEM key, private or public.
func ParseKey(data []byte) (*Key, error) {
	sk, err := signerverifier.LoadKey(data)
	if err != nil {
		return nil, wrap(CodeKey, err, "not a PEM Ed25519, ECDSA or RSA key")
	}
	var sv dsse.SignerVerifier
	switch sk.KeyType {
	case signerverifier.ED25519KeyType:
		sv, err = signerverifier.NewED25519SignerVerifierFromSSLibKey(sk)
	case signerverifier.ECDSAKeyType:
		sv, err = signerverifier.NewECDSASignerVerifierFromSSLibKey(sk)
	case signerverifier.RSAKeyType:
		sv, err = signerverifier.NewRSAPSSSignerVerifierFromSSLibKey(sk)
	default:
		err = fmt.Errorf("key type %q", sk.KeyType)
	}
	if err != nil {
		return nil, wrap(CodeKey, err, "unsupported key")
	}
	return &Key{sv: sv, id: sk.KeyID, pem: data}, nil
}

// LoadKey reads a PEM key file.
func LoadKey(file string) (*Key, error) {
	data, err := readBounded(file, 64<<10)
	if err != nil {
		return nil, wrap(CodeKey, err, "reading %s", file)
	}
	k, err := ParseKey(data)
	if err != nil {
		return nil, wrap(CodeKey, err, "%s", file)
	}
	return k, nil
}

// GenerateKey returns a new Ed25519 key pair in PEM: the private key
// (PKCS#8) and the public key (PKIX).
func GenerateKey() (private, public []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pp, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pp}), nil
}

// statement returns the in-toto statement of b, encoded.
func statement(b *Bundle) ([]byte, error) {
	mdata, err := json.Marshal(&b.Manifest)
	if err != nil {
		return nil, err
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(mdata, pred); err != nil {
		return nil, err
	}
	st := &ita.Statement{
		Type:          ita.StatementTypeUri,
		Subject:       []*ita.ResourceDescriptor{{Name: b.Manifest.Name + ".tar.gz", Digest: map[string]string{"sha256": b.ArchiveDigest()}}},
		PredicateType: PredicateType,
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return nil, err
	}
	return protojson.Marshal(st)
}

// Sign signs b with keys (private keys) and returns the envelope. With a
// previous envelope of the same bundle (prev, not nil), the signatures are
// added to its own, so that several key holders sign one after the other
// toward a threshold; a previous envelope of another bundle is refused.
func Sign(ctx context.Context, b *Bundle, prev *dsse.Envelope, keys ...*Key) (*dsse.Envelope, error) {
	if len(keys) == 0 {
		return nil, errorf(CodeKey, "no signing key")
	}
	payload, err := statement(b)
	if err != nil {
		return nil, fmt.Errorf("bundle: the statement: %w", err)
	}
	if prev != nil {
		if err := checkStatement(prev, b); err != nil {
			return nil, err
		}
		// Sign the very bytes already signed.
		if payload, err = prev.DecodeB64Payload(); err != nil {
			return nil, wrap(CodeBadSignature, err, "the previous envelope's payload")
		}
	}
	signers := make([]dsse.Signer, len(keys))
	for i, k := range keys {
		signers[i] = k.sv
	}
	es, err := dsse.NewEnvelopeSigner(signers...)
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, wrap(CodeKey, err, "signing (a public key cannot sign)")
	}
	if prev != nil {
		sigs := slices.Clone(prev.Signatures)
		for _, s := range env.Signatures {
			if !slices.ContainsFunc(sigs, func(o dsse.Signature) bool { return o.KeyID == s.KeyID }) {
				sigs = append(sigs, s)
			}
		}
		env = &dsse.Envelope{PayloadType: prev.PayloadType, Payload: prev.Payload, Signatures: sigs}
	}
	return env, nil
}

// checkStatement decodes env's statement without checking a signature and
// refuses it when it is not b's.
func checkStatement(env *dsse.Envelope, b *Bundle) error {
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return wrap(CodeBadSignature, err, "the envelope's payload")
	}
	return matchStatement(env.PayloadType, payload, b)
}

// matchStatement refuses a payload that is not an in-toto statement of
// b's archive digest and manifest.
func matchStatement(payloadType string, payload []byte, b *Bundle) error {
	st, err := statementOf(payloadType, payload, b.ArchiveDigest())
	if err != nil {
		return err
	}
	return matchManifest(st, b)
}

// statementOf is the in-toto statement of payload, refused when it is not
// one of a celguard bundle whose archive has the SHA-256 digest.
func statementOf(payloadType string, payload []byte, digest string) (*ita.Statement, error) {
	if payloadType != PayloadType {
		return nil, errorf(CodeSubject, "payload type %q, not %q", payloadType, PayloadType)
	}
	var st ita.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		return nil, wrap(CodeSubject, err, "the signed statement")
	}
	if err := st.Validate(); err != nil {
		return nil, wrap(CodeSubject, err, "the signed statement")
	}
	if st.GetType() != ita.StatementTypeUri || st.GetPredicateType() != PredicateType {
		return nil, errorf(CodeSubject, "the statement is %s of %s, not a celguard bundle", st.GetType(), st.GetPredicateType())
	}
	if len(st.GetSubject()) != 1 || st.GetSubject()[0].GetDigest()["sha256"] != digest {
		return nil, errorf(CodeSubject, "the signature is for another archive than this one (sha256 %s)", digest)
	}
	return &st, nil
}

// matchManifest refuses a statement whose manifest is not b's.
func matchManifest(st *ita.Statement, b *Bundle) error {
	pj, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return wrap(CodeSubject, err, "the signed manifest")
	}
	signed, err := ParseManifest(pj)
	if err != nil {
		return wrap(CodeSubject, err, "the signed manifest")
	}
	want, _ := json.Marshal(&b.Manifest)
	got, _ := json.Marshal(signed)
	if !bytes.Equal(want, got) {
		return errorf(CodeSubject, "the signed manifest is not the archive's")
	}
	return nil
}

// TrustPolicy is what a machine accepts: bundles signed by at least
// Threshold of Keys (each key counted once). Rotating a key is adding the
// new one, signing with both, then removing the old one (docs/bundles.md).
type TrustPolicy struct {
	Keys      []*Key
	Threshold int
}

// LoadTrustPolicy reads public key files and sets the threshold (0 means
// 1).
func LoadTrustPolicy(threshold int, files ...string) (*TrustPolicy, error) {
	tp := &TrustPolicy{Threshold: threshold}
	for _, f := range files {
		k, err := LoadKey(f)
		if err != nil {
			return nil, err
		}
		tp.Keys = append(tp.Keys, k)
	}
	return tp, tp.check()
}

func (tp *TrustPolicy) check() error {
	if tp == nil || len(tp.Keys) == 0 {
		return errorf(CodeKey, "no verification key configured")
	}
	if tp.Threshold == 0 {
		tp.Threshold = 1
	}
	ids := map[string]bool{}
	for _, k := range tp.Keys {
		ids[k.id] = true
	}
	if tp.Threshold < 1 || tp.Threshold > len(ids) {
		return errorf(CodeKey, "threshold %d with %d distinct keys", tp.Threshold, len(ids))
	}
	return nil
}

// Verified is a bundle whose signatures met a trust policy.
type Verified struct {
	*Bundle
	// KeyIDs are the keys whose signatures were accepted.
	KeyIDs []string
}

// ParseEnvelope parses an envelope file: at most 1 MiB, strict JSON.
func ParseEnvelope(data []byte) (*dsse.Envelope, error) {
	if len(data) > maxEnvelope {
		return nil, errorf(CodeBadSignature, "the envelope is over %d bytes", maxEnvelope)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var env dsse.Envelope
	if err := dec.Decode(&env); err != nil {
		return nil, wrap(CodeBadSignature, err, "not a DSSE envelope")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(CodeBadSignature, "data after the envelope")
	}
	if len(env.Signatures) > 64 {
		return nil, errorf(CodeBadSignature, "%d signatures; at most 64", len(env.Signatures))
	}
	return &env, nil
}

// Verify accepts the archive only when the envelope's signatures by tp's
// keys reach its threshold and the signed statement names this archive's
// digest and manifest. The archive is read (Read, within lim) only after a
// signature vouches for its digest. An envelope that is
// missing (nil or empty) is CodeUnsigned; one whose signatures fall short
// CodeBadSignature; one for another archive CodeSubject.
func Verify(ctx context.Context, archive, envelope []byte, tp *TrustPolicy, lim Limits) (*Verified, error) {
	if err := tp.check(); err != nil {
		return nil, err
	}
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	if int64(len(archive)) > lim.Archive {
		return nil, errorf(CodeTooLarge, "archive is %d bytes, over the limit of %d", len(archive), lim.Archive)
	}
	if len(bytes.TrimSpace(envelope)) == 0 {
		return nil, errorf(CodeUnsigned, "no signature envelope")
	}
	env, err := ParseEnvelope(envelope)
	if err != nil {
		return nil, err
	}
	if len(env.Signatures) == 0 {
		return nil, errorf(CodeUnsigned, "the envelope has no signature")
	}
	verifiers := make([]dsse.Verifier, 0, len(tp.Keys))
	seen := map[string]bool{}
	for _, k := range tp.Keys {
		if !seen[k.id] { // one key listed twice counts once
			seen[k.id] = true
			verifiers = append(verifiers, k.sv)
		}
	}
	ev, err := dsse.NewMultiEnvelopeVerifier(tp.Threshold, verifiers...)
	if err != nil {
		return nil, wrap(CodeKey, err, "the trust policy")
	}
	accepted, payload, err := ev.VerifyAndDecode(ctx, env)
	if err != nil {
		if errors.Is(err, dsse.ErrNoSignature) {
			return nil, errorf(CodeUnsigned, "the envelope has no signature")
		}
		return nil, wrap(CodeBadSignature, err, "%d of the %d signatures verify with the configured keys; %d needed", len(accepted), len(env.Signatures), tp.Threshold)
	}
	// The archive is read only once a signature vouches for its digest:
	// gzip, tar and JSON decode what the writer describes, and a forged
	// archive of 4 KB (a 4 MB manifest listing empty files) allocated 347
	// MB in Read. The bundle in force is read from a file on disk at
	// every call, and a hook that runs out of memory crashes.
	st, err := statementOf(env.PayloadType, payload, sha256Hex(archive))
	if err != nil {
		return nil, err
	}
	b, err := Read(archive, lim)
	if err != nil {
		return nil, err
	}
	if err := matchManifest(st, b); err != nil {
		return nil, err
	}
	v := &Verified{Bundle: b}
	for _, a := range accepted {
		v.KeyIDs = append(v.KeyIDs, a.KeyID)
	}
	return v, nil
}

// readBounded reads at most max bytes of file, refusing a larger one.
func readBounded(file string, max int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", file, max)
	}
	return data, nil
}
