package verify

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func readFixture(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProvenanceHelmFixture verifies a chart that Helm's own code packaged
// and signed (action.Package with Sign, as `helm package --sign`; see
// testdata/README.md), so the check agrees with Helm's format, not only
// with this package's reading of it.
func TestProvenanceHelmFixture(t *testing.T) {
	const name = "signed-0.1.0.tgz"
	archive := readFixture(t, "helm", name)
	prov := readFixture(t, "helm", name+".prov")
	for _, ring := range []string{"keyring.asc", "keyring.gpg"} {
		keyring := readFixture(t, "helm", ring)
		if err := Provenance(archive, name, prov, keyring); err != nil {
			t.Errorf("Provenance with %s: %v, want nil", ring, err)
		}
		tampered := append([]byte(nil), archive...)
		tampered[len(tampered)/2] ^= 0xff
		if err := Provenance(tampered, name, prov, keyring); !errors.Is(err, ErrSignatureInvalid) {
			t.Errorf("Provenance of a tampered archive with %s: %v, want ErrSignatureInvalid", ring, err)
		}
		if err := Provenance(archive, "signed-0.2.0.tgz", prov, keyring); !errors.Is(err, ErrSignatureInvalid) {
			t.Errorf("Provenance under another archive name with %s: %v, want ErrSignatureInvalid", ring, err)
		}
	}
	other := armoredKeyring(t, newPGPKey(t, nil))
	if err := Provenance(archive, name, prov, other); !errors.Is(err, ErrSignatureInvalid) {
		t.Errorf("Provenance with another keyring: %v, want ErrSignatureInvalid", err)
	}
}
