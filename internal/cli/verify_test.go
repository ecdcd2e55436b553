package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/source/sourcetest"
)

func writeFile(t *testing.T, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVerifyBundleSource: render and bundle pack with --verify check the
// chart's signature as a Bundle's spec.source.verify has the controller
// do, and refuse an unsigned or wrongly signed chart; a Bundle manifest
// whose spec.source.verify is set is verified with --verify-key, or
// refused saying the key is needed.
func TestVerifyBundleSource(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	key, other := sourcetest.NewCosignKey(t), sourcetest.NewCosignKey(t)
	m, _ := reg.Push(t, "charts/greeter", "1.0.0", greeterChart(t, "1.0.0"))
	reg.Sign(t, key, "charts/greeter", m)
	reg.Push(t, "charts/greeter", "2.0.0", greeterChart(t, "2.0.0"))
	regCA := writeCA(t, reg.CA)
	pub, otherPub := writeFile(t, "cosign.pub", key.PublicPEM), writeFile(t, "other.pub", other.PublicPEM)

	repo := sourcetest.NewRepo(t, "", "")
	pgp := sourcetest.NewPGPKey(t)
	repo.AddSigned(t, pgp, "greeter", "1.0.0", greeterChart(t, "1.0.0"))
	repo.Add("plain", "1.0.0", greeterChart(t, "1.0.0"), nil)
	repoCA := writeCA(t, repo.CA)
	keyring := writeFile(t, "keyring.asc", pgp.Keyring)

	render := []string{"render", "--offline", "--name", "web", "-n", "team"}
	bundleYAML := func(ref string) string {
		return writeFile(t, "bundle.yaml", []byte("apiVersion: stencil.dev/v1alpha1\nkind: Bundle\nmetadata:\n  name: greeter\nspec:\n  source:\n    oci: "+ref+
			"\n    verify:\n      provider: cosign\n      secretRef:\n        name: greeter-keys\n"))
	}
	for _, tt := range []struct {
		name string
		args []string
		ok   bool
		want string // in stdout when ok, in stderr else
	}{
		{"render signed", append(render, "--bundle", reg.Ref("charts/greeter", "1.0.0"), "--ca-file", regCA, "--verify", "cosign", "--verify-key", pub), true, "name: web-cfg"},
		{"render unsigned", append(render, "--bundle", reg.Ref("charts/greeter", "2.0.0"), "--ca-file", regCA, "--verify", "cosign", "--verify-key", pub), false, "not signed"},
		{"render another key", append(render, "--bundle", reg.Ref("charts/greeter", "1.0.0"), "--ca-file", regCA, "--verify", "cosign", "--verify-key", otherPub), false, "signature is invalid"},
		{"render without a key", append(render, "--bundle", reg.Ref("charts/greeter", "1.0.0"), "--ca-file", regCA, "--verify", "cosign"), false, "--verify-key"},
		{"render unknown provider", append(render, "--bundle", reg.Ref("charts/greeter", "1.0.0"), "--ca-file", regCA, "--verify", "gpg", "--verify-key", pub), false, "cosign or helm"},
		{"render repo signed", append(render, "--repo", repo.URL, "--chart", "greeter", "--ca-file", repoCA, "--verify", "helm", "--verify-key", keyring), true, "name: web-cfg"},
		{"render repo unsigned", append(render, "--repo", repo.URL, "--chart", "plain", "--ca-file", repoCA, "--verify", "helm", "--verify-key", keyring), false, "no provenance file"},
		{"pack signed", []string{"bundle", "pack", reg.Ref("charts/greeter", "1.0.0"), "--ca-file", regCA, "--verify", "cosign", "--verify-key", pub}, true, "kind: Bundle"},
		{"pack unsigned", []string{"bundle", "pack", reg.Ref("charts/greeter", "2.0.0"), "--ca-file", regCA, "--verify", "cosign", "--verify-key", pub}, false, "not signed"},
		{"pack repo signed", []string{"bundle", "pack", "--repo", repo.URL, "--chart", "greeter", "--ca-file", repoCA, "--verify", "helm", "--verify-key", keyring}, true, "kind: Bundle"},
		{"pack repo wrong keyring", []string{"bundle", "pack", "--repo", repo.URL, "--chart", "greeter", "--ca-file", repoCA, "--verify", "helm", "--verify-key", pub}, false, "verification key is invalid"},
		{"Bundle manifest with verify, key given", append(render, "--bundle", bundleYAML(reg.Ref("charts/greeter", "1.0.0")), "--ca-file", regCA, "--verify-key", pub), true, "name: web-cfg"},
		{"Bundle manifest with verify, unsigned", append(render, "--bundle", bundleYAML(reg.Ref("charts/greeter", "2.0.0")), "--ca-file", regCA, "--verify-key", pub), false, "not signed"},
		{"Bundle manifest with verify, no key", append(render, "--bundle", bundleYAML(reg.Ref("charts/greeter", "1.0.0")), "--ca-file", regCA), false, "needs the key: give --verify-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := stencil(t, "", tt.args...)
			switch {
			case tt.ok && code != 0:
				t.Fatalf("exit %d: %s", code, errOut)
			case tt.ok && !strings.Contains(out, tt.want):
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			case !tt.ok && code == 0:
				t.Fatalf("exit 0; want a refusal saying %q; output:\n%s", tt.want, out)
			case !tt.ok && !strings.Contains(errOut, tt.want):
				t.Errorf("stderr %q; want it to say %q", errOut, tt.want)
			}
			if strings.Contains(errOut, "PUBLIC KEY") {
				t.Errorf("stderr quotes the key: %s", errOut)
			}
		})
	}
}
