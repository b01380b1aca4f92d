package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// pemOf returns the public PEM a test key pair was made from.
func pemOf(t testing.TB, k *Key) []byte {
	t.Helper()
	return k.pem
}

// keyPair returns a new key pair as private and public Keys.
func keyPair(t testing.TB) (priv, pub *Key) {
	t.Helper()
	privPEM, pubPEM, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err = ParseKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err = ParseKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if priv.ID() != pub.ID() {
		t.Fatalf("private and public key IDs differ: %s, %s", priv.ID(), pub.ID())
	}
	return priv, pub
}

func envJSON(t testing.TB, env *dsse.Envelope) []byte {
	t.Helper()
	data, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSignVerify(t *testing.T) {
	ctx := context.Background()
	b := buildTeam(t, 2)
	aPriv, aPub := keyPair(t)
	bPriv, bPub := keyPair(t)
	_, cPub := keyPair(t)

	byA := envJSON(t, must(Sign(ctx, b, nil, aPriv)))
	prev, err := ParseEnvelope(byA)
	if err != nil {
		t.Fatal(err)
	}
	// The second key holder adds a signature to the first's envelope.
	byAB := envJSON(t, must(Sign(ctx, b, prev, bPriv)))

	for _, tc := range []struct {
		name     string
		envelope []byte
		tp       *TrustPolicy
		code     Code
	}{
		{"one key", byA, &TrustPolicy{Keys: []*Key{aPub}}, ""},
		{"one of two", byA, &TrustPolicy{Keys: []*Key{aPub, bPub}, Threshold: 1}, ""},
		{"threshold 2 met", byAB, &TrustPolicy{Keys: []*Key{aPub, bPub, cPub}, Threshold: 2}, ""},
		{"threshold 2 short", byA, &TrustPolicy{Keys: []*Key{aPub, bPub, cPub}, Threshold: 2}, CodeBadSignature},
		{"same key twice is one", byA, &TrustPolicy{Keys: []*Key{aPub, aPub}, Threshold: 2}, CodeKey},
		{"another key", byA, &TrustPolicy{Keys: []*Key{cPub}}, CodeBadSignature},
		{"no envelope", nil, &TrustPolicy{Keys: []*Key{aPub}}, CodeUnsigned},
		{"unknown field", []byte(strings.Replace(string(byA), `"signatures":[{`, `"signatures":[],"x":[{`, 1)), &TrustPolicy{Keys: []*Key{aPub}}, CodeBadSignature},
		{"not json", []byte("{"), &TrustPolicy{Keys: []*Key{aPub}}, CodeBadSignature},
		{"no keys", byA, &TrustPolicy{}, CodeKey},
	} {
		v, err := Verify(ctx, b.Archive, tc.envelope, tc.tp, Limits{})
		if CodeOf(err) != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("%s: Verify = %v, want code %q", tc.name, err, tc.code)
			continue
		}
		if err == nil && (v.Manifest.Serial != 2 || len(v.KeyIDs) < tc.tp.Threshold) {
			t.Errorf("%s: verified %+v", tc.name, v)
		}
	}
	empty := &dsse.Envelope{PayloadType: PayloadType, Payload: prev.Payload, Signatures: []dsse.Signature{}}
	if _, err := Verify(ctx, b.Archive, envJSON(t, empty), &TrustPolicy{Keys: []*Key{aPub}}, Limits{}); CodeOf(err) != CodeUnsigned {
		t.Errorf("stripped signatures: %v", err)
	}
}

// TestVerifySubject: a good signature over another bundle (an older one,
// or the same manifest with other content) does not vouch for this one.
func TestVerifySubject(t *testing.T) {
	ctx := context.Background()
	priv, pub := keyPair(t)
	tp := &TrustPolicy{Keys: []*Key{pub}}
	old, cur := buildTeam(t, 1), buildTeam(t, 2)
	oldEnv := envJSON(t, must(Sign(ctx, old, nil, priv)))
	if _, err := Verify(ctx, cur.Archive, oldEnv, tp, Limits{}); CodeOf(err) != CodeSubject {
		t.Errorf("old bundle's signature on the new archive: %v", err)
	}
	// A previous envelope of another bundle cannot be signed onto.
	prev, _ := ParseEnvelope(oldEnv)
	if _, err := Sign(ctx, cur, prev, priv); CodeOf(err) != CodeSubject {
		t.Errorf("Sign onto another bundle's envelope: %v", err)
	}
	// Payload swapped for another statement keeps no valid signature.
	curEnv := must(Sign(ctx, cur, nil, priv))
	swapped := *curEnv
	swapped.Payload = prev.Payload
	if _, err := Verify(ctx, cur.Archive, envJSON(t, &swapped), tp, Limits{}); CodeOf(err) != CodeBadSignature {
		t.Errorf("payload swapped: %v", err)
	}
	// A public key cannot sign.
	if _, err := Sign(ctx, cur, nil, pub); CodeOf(err) != CodeKey {
		t.Errorf("Sign with a public key: %v", err)
	}
}

// TestKeyRotation walks docs/bundles.md's rotation: machines trust the old
// key; they are given the old and the new key (threshold 1); bundles are
// signed with both; then with the new one only; then machines drop the old
// key, and a bundle signed with it alone (a leaked old key) is refused.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	oldPriv, oldPub := keyPair(t)
	newPriv, newPub := keyPair(t)
	before := &TrustPolicy{Keys: []*Key{oldPub}}
	during := &TrustPolicy{Keys: []*Key{oldPub, newPub}}
	after := &TrustPolicy{Keys: []*Key{newPub}}

	b1 := buildTeam(t, 1)
	both := envJSON(t, must(Sign(ctx, b1, nil, oldPriv, newPriv)))
	for _, tp := range []*TrustPolicy{before, during, after} {
		if _, err := Verify(ctx, b1.Archive, both, tp, Limits{}); err != nil {
			t.Errorf("a bundle signed with both keys is refused by %d keys: %v", len(tp.Keys), err)
		}
	}
	b2 := buildTeam(t, 2)
	newOnly := envJSON(t, must(Sign(ctx, b2, nil, newPriv)))
	if _, err := Verify(ctx, b2.Archive, newOnly, during, Limits{}); err != nil {
		t.Errorf("new key during rotation: %v", err)
	}
	if _, err := Verify(ctx, b2.Archive, newOnly, before, Limits{}); CodeOf(err) != CodeBadSignature {
		t.Errorf("a machine not yet given the new key accepted it: %v", err)
	}
	oldOnly := envJSON(t, must(Sign(ctx, b2, nil, oldPriv)))
	if _, err := Verify(ctx, b2.Archive, oldOnly, after, Limits{}); CodeOf(err) != CodeBadSignature {
		t.Errorf("the retired key is still accepted: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, in := range []string{"", "not pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"} {
		if _, err := ParseKey([]byte(in)); CodeOf(err) != CodeKey {
			t.Errorf("ParseKey(%q) = %v", in, err)
		}
	}
}

func FuzzParseEnvelope(f *testing.F) {
	priv, pub := keyPair(f)
	b := buildTeam(f, 1)
	good := envJSON(f, must(Sign(context.Background(), b, nil, priv)))
	f.Add(good)
	f.Add([]byte(`{"payloadType":"x","payload":"","signatures":[]}`))
	tp := &TrustPolicy{Keys: []*Key{pub}}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Verify(context.Background(), b.Archive, data, tp, Limits{})
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		if !bytes.Equal(v.Archive, b.Archive) || len(v.KeyIDs) == 0 {
			t.Fatalf("accepted without a key: %+v", v.KeyIDs)
		}
	})
}

// A forged archive is never decompressed or decoded: Verify reads an
// archive only once a signature vouches for its digest. Read first, a 4
// KB archive whose manifest lists a million empty files allocated 347 MB
// before its missing signature was noticed.
func TestVerifyForgedArchiveBounded(t *testing.T) {
	ctx := context.Background()
	var m bytes.Buffer
	m.WriteString(`{"files":[`)
	for m.Len() < 4<<20-8 { // just under Limits.File
		m.WriteString(`{},`)
	}
	m.WriteString(`{}]}`)
	var archive bytes.Buffer
	zw := gzip.NewWriter(&archive)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: manifestFile, Mode: 0o600, Size: int64(m.Len()), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(m.Bytes())
	_ = tw.Close()
	_ = zw.Close()

	priv, pub := keyPair(t)
	tp := &TrustPolicy{Keys: []*Key{pub}}
	other := envJSON(t, must(Sign(ctx, buildTeam(t, 1), nil, priv)))
	for _, tc := range []struct {
		name     string
		envelope []byte
		code     Code
	}{
		{"no envelope", nil, CodeUnsigned},
		{"no signature", []byte(`{"payloadType":"x","payload":"","signatures":[]}`), CodeUnsigned},
		{"another bundle's signature", other, CodeSubject},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Verify(ctx, archive.Bytes(), tc.envelope, tp, Limits{})
		runtime.ReadMemStats(&after)
		if CodeOf(err) != tc.code {
			t.Errorf("%s: Verify = %v, want code %q", tc.name, err, tc.code)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
			t.Errorf("%s: a forged archive of %d bytes made %d bytes of allocation", tc.name, archive.Len(), n)
		}
	}
}
