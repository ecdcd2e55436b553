// Command image builds stencil's controller image with no Docker daemon
// and no base image from a registry, and pushes it to any OCI registry.
//
//	go run ./hack/image build [-out bin/image] [-version V] [-epoch SECONDS] [-platform linux/amd64]
//	go run ./hack/image push -image REGISTRY/REPO[:TAG] [-layout bin/image]
//	go run ./hack/image pause -out FILE.tar [-tag NAME:TAG]
//
// `make image` and `make push IMAGE=...` run it.
//
// The image is two layers on nothing (go-containerregistry's empty.Image):
// a base (an /etc/passwd with the non-root user nonroot, 65532, Mozilla's
// CA bundle as golang.org/x/crypto/x509roots/fallback pins it, the Go
// toolchain's time zone database) and the controller binary, built with
// CGO_ENABLED=0, -trimpath, no VCS stamp and an empty build id. Every tar
// entry is sorted, owned by a fixed uid and gid with a fixed mode, and
// dated SOURCE_DATE_EPOCH (default: the commit time of HEAD), as are the
// image's config and history; so the same commit built with the same Go
// toolchain gives the same digest on any machine. build prints it and
// writes the image as an OCI layout (bin/image/oci), a tarball for
// `docker load` or `ctr images import` (bin/image/stencil.tar) and the
// digest alone (bin/image/digest).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "build":
		err = runBuild(ctx, os.Args[2:])
	case "push":
		err = runPush(ctx, os.Args[2:])
	case "pause":
		err = runPause(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: image build [-out DIR] [-version V] [-epoch SECONDS] [-platform OS/ARCH]\n       image push -image REGISTRY/REPO[:TAG] [-layout DIR]\n       image pause -out FILE.tar [-tag NAME:TAG]")
	os.Exit(2)
}

func runBuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	out := fs.String("out", "bin/image", "folder to write the OCI layout (oci/), the tarball (stencil.tar) and the digest to")
	version := fs.String("version", "", "version stamped into the binary and the image (default: git describe --tags --always --dirty)")
	epoch := fs.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970 to date every file and the image by (default: $SOURCE_DATE_EPOCH, else the commit time of HEAD)")
	platform := fs.String("platform", "linux/amd64", "OS/ARCH of the image")
	source := fs.String("source", ".", "the module to build (stencil's root)")
	_ = fs.Parse(args)
	opts, err := resolveOptions(ctx, *source, *version, *epoch, *platform)
	if err != nil {
		return err
	}
	res, err := Build(ctx, opts, *out)
	if err != nil {
		return err
	}
	fmt.Printf("stencil image %s %s (%s, Go %s, %d MB) in %s\n", opts.Version, res.Digest, opts.Platform, opts.GoVersion, (res.Size+1<<19)>>20, *out)
	return nil
}

func runPush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	image := fs.String("image", "", "REGISTRY/REPO to push to, optionally :TAG (default tag: the image's version)")
	dir := fs.String("layout", "bin/image", "the folder build wrote")
	_ = fs.Parse(args)
	if *image == "" {
		return fmt.Errorf("push: -image REGISTRY/REPO is required (make push IMAGE=...)")
	}
	ref, err := Push(ctx, *dir, *image)
	if err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}
