// Command release writes stencil's release manifests into a folder
// (`make release IMAGE=REGISTRY/REPO`: dist/):
//
//   - kustomization.yaml: config/default (or -config, such as
//     config/write-as-controller) with the controller's image named
//     REGISTRY/REPO@DIGEST, the digest of the image `make image` built
//     (bin/image). A checkout's way in: apply it (kubectl apply
//     --server-side -k dist/), or use it as the base of an overlay.
//
//   - install.yaml: what it builds to, in one file: the CRDs, the
//     admission policy, the RBAC, the Deployment, the webhook
//     configurations and the NetworkPolicy. The release's way in:
//     kubectl apply --server-side -f install.yaml.
//
//     go run ./hack/release -image REGISTRY/REPO [-layout bin/image] [-out dist] [-config config/default]
//
// The image is named by digest, so the manifest installs exactly the image
// that was built (and pushed: make push IMAGE=REGISTRY/REPO), whatever
// later happens to its tags.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	image := flag.String("image", "", "REGISTRY/REPO the image is (to be) pushed to, without tag or digest")
	dir := flag.String("layout", "bin/image", "the folder make image wrote (its OCI layout gives the digest and version)")
	out := flag.String("out", "dist", "folder to write kustomization.yaml and install.yaml to")
	config := flag.String("config", "config/default", "the kustomization to release")
	flag.Parse()
	digest, version, err := imageOf(*dir)
	if err == nil {
		err = Write(*out, *config, *image, digest, version)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: stencil %s, image %s@%s\n", filepath.Join(*out, "install.yaml"), version, *image, digest)
}

// imageOf reads the digest and version of the image in the OCI layout
// hack/image wrote under dir.
func imageOf(dir string) (digest, version string, err error) {
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		return "", "", fmt.Errorf("read the image in %s (make image): %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return "", "", err
	}
	if len(m.Manifests) != 1 {
		return "", "", fmt.Errorf("%s holds %d images, want 1", dir, len(m.Manifests))
	}
	return m.Manifests[0].Digest.String(), m.Manifests[0].Annotations["org.opencontainers.image.ref.name"], nil
}

// Write writes out/kustomization.yaml, config with the controller image
// image@digest, and out/install.yaml, its build.
func Write(out, config, image, digest, version string) error {
	repo, err := name.NewRepository(image)
	if err != nil || strings.ContainsAny(image, "@") || strings.Contains(image[strings.LastIndex(image, "/")+1:], ":") {
		return fmt.Errorf("-image %q: want REGISTRY/REPO, without tag or digest (%v)", image, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	absConfig, err := filepath.Abs(config)
	if err != nil {
		return err
	}
	base, err := filepath.Rel(absOut, absConfig)
	if err != nil {
		return err
	}
	k := fmt.Sprintf(kustomization, version, filepath.ToSlash(base), repo.Name(), digest, filepath.Base(absConfig))
	if err := os.WriteFile(filepath.Join(out, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return err
	}
	// kubectl kustomize's order: Namespaces and CRDs first, webhook
	// configurations last, so that one kubectl apply -f creates every
	// object in the order it needs.
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), absOut)
	if err != nil {
		return fmt.Errorf("kustomize build %s: %w", out, err)
	}
	yaml, err := res.AsYaml()
	if err != nil {
		return err
	}
	header := fmt.Sprintf(installHeader, version, repo.Name(), digest, filepath.Base(absConfig))
	return os.WriteFile(filepath.Join(out, "install.yaml"), append([]byte(header), yaml...), 0o644)
}

const kustomization = `# stencil %[1]s: config/%[5]s with the controller image by digest.
# Written by make release (hack/release). Install with
#   kubectl apply --server-side -k .
# or make it the base of an overlay of your own (resources: [path/to/this/folder]).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %[2]s
images:
- name: stencil
  newName: %[3]s
  digest: %[4]s
`

const installHeader = `# stencil %[1]s, installed with
#   kubectl apply --server-side -f install.yaml
# Controller image: %[2]s@%[3]s
# Written by make release (hack/release) from config/%[4]s: CRDs,
# admission policy, RBAC, the controller Deployment in stencil-system, its
# webhook configurations and NetworkPolicy. Upgrade by applying the next
# release's file the same way: the webhook's certificate (Secret
# stencil-webhook-cert, made by the controller) is kept.
`
