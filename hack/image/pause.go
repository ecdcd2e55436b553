package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// runPause writes the sandbox ("pause") image of the install test's node
// (hack/node.sh), which cannot pull registry.k8s.io/pause: hack/pause,
// built as the controller is, as /pause run by 65535, in a tarball
// `ctr images import` reads.
func runPause(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pause", flag.ExitOnError)
	out := fs.String("out", "", "the tarball to write")
	tag := fs.String("tag", "stencil.local/pause:1", "the image's name")
	platform := fs.String("platform", "linux/amd64", "OS/ARCH of the image")
	source := fs.String("source", ".", "stencil's root")
	_ = fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("pause: -out is required")
	}
	o, err := resolveOptions(ctx, *source, "pause", "0", *platform)
	if err != nil {
		return err
	}
	bin, err := compile(ctx, o, "./hack/pause", "")
	if err != nil {
		return err
	}
	l, err := layer([]file{{name: "pause", mode: 0o555, data: bin}}, o.Epoch)
	if err != nil {
		return err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{Architecture: o.Platform.Architecture, OS: o.Platform.OS,
		Config: v1.Config{User: "65535:65535", Entrypoint: []string{"/pause"}, WorkingDir: "/"}})
	if err != nil {
		return err
	}
	if img, err = mutate.AppendLayers(img, l); err != nil {
		return err
	}
	t, err := name.NewTag(*tag)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(*out, t, img); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "sandbox image", *tag, "in", *out)
	return nil
}
