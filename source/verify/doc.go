// Package verify checks the signature of a chart a Bundle pulls from a
// registry, against keys a cluster admin gives in a Secret
// (spec.source.verify). It owns two checks and nothing else: the caller
// (package source) has pulled the artifact and resolved its digest, and
// the controller turns the result into a Bundle condition.
//
//   - Cosign: the cosign signature of an OCI artifact, as `cosign sign
//     --key` stores it beside the artifact (tag sha256-<hex>.sig in the
//     same repository, one simple-signing payload per layer, the signature
//     in the layer's dev.cosignproject.cosign/signature annotation),
//     checked against the PEM public keys of the Secret's cosign.pub
//     (ECDSA P-256/P-384/P-521, RSA of 2048 bits or more, Ed25519).
//   - Provenance: a Helm provenance file (`helm package --sign`: an
//     OpenPGP clear-signed Chart.yaml and the archive's sha256), checked
//     against the OpenPGP keyring of the Secret's keyring key (armored or
//     binary, as `gpg --export` writes it).
//
// Invariants:
//
//   - A chart passes only if one signature verifies with one of the given
//     keys AND what it signs names the chart: the payload's
//     docker-manifest-digest is the pulled manifest digest and its
//     docker-reference the pulled repository (so a signature moved from
//     another repository or another version is refused); the provenance's
//     files: entry for the archive's name is the archive's sha256. Signed
//     content is parsed only after its signature verified.
//   - Every refusal wraps one of ErrUnsigned, ErrSignatureInvalid or
//     ErrBadKey (reasons Unsigned, SignatureInvalid, InvalidKey); any other
//     error is the registry's or a caller's and is no verdict on the
//     signature. No message quotes key material or signed content.
//   - What is read from a registry is bounded: the signature manifest by
//     MaxSignatureManifestSize (its size is learnt with a HEAD before its
//     body is read), the signatures checked by MaxSignatures, each payload
//     by MaxPayloadSize; a provenance file by MaxProvenanceSize, keys by
//     MaxKeys.
//   - Only the artifact's own repository is asked, with the caller's
//     remote options: no transparency log, no certificate chain, no
//     keyless identity, no other network.
//
// Example, after source pulled 127.0.0.1:5000/charts/podinfo@sha256:…:
//
//	err := verify.Cosign(ctx, "127.0.0.1:5000/charts/podinfo", digest, secret.Data["cosign.pub"], remoteOpts...)
//	switch {
//	case errors.Is(err, verify.ErrUnsigned): // reason Unsigned
//	case errors.Is(err, verify.ErrSignatureInvalid): // reason SignatureInvalid
//	case errors.Is(err, verify.ErrBadKey): // reason InvalidKey
//	case err != nil: // the registry's error: retry
//	}
package verify
