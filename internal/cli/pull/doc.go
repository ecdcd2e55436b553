// Package pull is how the commands pull a chart from a registry, as
// `helm template` names one: Flags are --repo, --chart, --version,
// --username, --password ($STENCIL_REGISTRY_PASSWORD), --ca-file,
// --verify, --verify-key and --plain-http; ParseSource reads a --bundle
// that names a chart (oci://HOST/PATH:TAG, oci://HOST/PATH@sha256:HEX,
// https://REPO#CHART[@VERSION]); Flags.Load pulls it (package source) and
// loads it as a Bundle of those files.
//
// Invariants: a chart is pulled with the checks and bounds the controller
// pulls a Bundle's spec.source with (digest verified, size bounded,
// unpacked with the same confinement), at most once per command and
// argument; a source to verify (by --verify or its own spec.source.verify)
// is refused without --verify-key, never pulled unverified. Unlike the
// controller, the user's pull may reach any address (a registry on
// localhost) and, with --plain-http, an OCI registry over http.
//
//	var pf pull.Flags
//	pf.Add(cmd.Flags())
//	arg, err := pf.BundleArg(bundle) // --repo URL --chart C: "URL#C"
//	if src, name, ok, err := pull.ParseSource(arg); ok && err == nil {
//		b, err := pf.Load(ctx, arg, name, src)
//	}
package pull
