// Command helmsign packages and signs a chart with Helm's own code
// (action.Package with Sign, as `helm package --sign` runs it), then
// verifies it with Helm's action.Verify, to make fixtures for stencil's
// source/verify tests.
package main

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"helm.sh/helm/v4/pkg/action"
)

func main() {
	out := os.Args[1]
	tmp, err := os.MkdirTemp("", "helmsign")
	check(err)
	defer os.RemoveAll(tmp)

	e, err := openpgp.NewEntity("Stencil Test Signer", "fixture", "signer@stencil.invalid",
		&packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 3072})
	check(err)
	var sec bytes.Buffer
	check(e.SerializePrivate(&sec, nil))
	secring := filepath.Join(tmp, "secring.gpg")
	check(os.WriteFile(secring, sec.Bytes(), 0o600))

	var pub bytes.Buffer
	check(e.Serialize(&pub))
	check(os.WriteFile(filepath.Join(out, "keyring.gpg"), pub.Bytes(), 0o644))
	var asc bytes.Buffer
	w, err := armor.Encode(&asc, openpgp.PublicKeyType, nil)
	check(err)
	check(e.Serialize(w))
	check(w.Close())
	asc.WriteByte('\n')
	check(os.WriteFile(filepath.Join(out, "keyring.asc"), asc.Bytes(), 0o644))

	chart := filepath.Join(tmp, "signed")
	check(os.MkdirAll(filepath.Join(chart, "templates"), 0o755))
	check(os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: signed\ndescription: A chart signed by helm package --sign\nversion: 0.1.0\nappVersion: \"1.0\"\n"), 0o644))
	check(os.WriteFile(filepath.Join(chart, "values.yaml"), []byte("greeting: hello\n"), 0o644))
	check(os.WriteFile(filepath.Join(chart, "templates", "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n"), 0o644))

	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := action.NewPackage()
	p.Sign = true
	p.Key = "Stencil Test Signer"
	p.Keyring = secring
	p.Destination = out
	p.SourceDateEpoch = &epoch
	archive, err := p.Run(chart, nil)
	check(err)
	log.Printf("packaged and signed %s", archive)

	v := action.NewVerify()
	v.Keyring = filepath.Join(out, "keyring.gpg")
	res, err := v.Run(archive)
	check(err)
	log.Printf("helm verify: %v", res)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
