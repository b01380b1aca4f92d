package bundle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/celguard/celguard/bundle"
)

// Build a bundle from a directory of policies and their suites, sign it
// with one key, and verify it as a machine configured with that key does.
func Example() {
	ctx := context.Background()
	b, err := bundle.Build(ctx, "testdata/team", bundle.BuildOptions{
		Name: "team", Version: "v1.0.0", Serial: 1, Layer: "admin",
		Created: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err) // bundle_lint_failed, bundle_tests_failed...
		return
	}
	privPEM, pubPEM, _ := bundle.GenerateKey()
	priv, _ := bundle.ParseKey(privPEM)
	pub, _ := bundle.ParseKey(pubPEM)
	env, _ := bundle.Sign(ctx, b, nil, priv)
	envelope, _ := json.Marshal(env)

	v, err := bundle.Verify(ctx, b.Archive, envelope, &bundle.TrustPolicy{Keys: []*bundle.Key{pub}}, bundle.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Manifest.Ref())
	fmt.Println(v.Manifest.Tests.Suites, "suite,", v.Manifest.Tests.Cases, "cases passed")
	for _, src := range v.Sources() {
		fmt.Println(src.Name, src.Layer)
	}

	// Another key, or no signature: refused, with a stable code.
	_, other, _ := bundle.GenerateKey()
	otherKey, _ := bundle.ParseKey(other)
	_, err = bundle.Verify(ctx, b.Archive, envelope, &bundle.TrustPolicy{Keys: []*bundle.Key{otherKey}}, bundle.Limits{})
	fmt.Println(bundle.CodeOf(err))
	_, err = bundle.Verify(ctx, b.Archive, nil, &bundle.TrustPolicy{Keys: []*bundle.Key{pub}}, bundle.Limits{})
	fmt.Println(bundle.CodeOf(err))
	// Output:
	// team v1.0.0 (serial 1)
	// 1 suite, 2 cases passed
	// bundle:team/no-rm.yaml admin
	// bundle_signature_invalid
	// bundle_unsigned
}
