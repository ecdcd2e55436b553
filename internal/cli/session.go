package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/templates"
)

// session is what a command knows of the cluster: nothing (offline), or a
// client, a discovery client and a discovery-backed RESTMapper.
type session struct {
	scheme    *runtime.Scheme
	namespace string
	mapper    meta.RESTMapper
	client    client.Client                           // nil when offline
	discovery discovery.DiscoveryInterfaceWithContext // nil when offline
	// notes receives what the user should know that is not an error,
	// such as API groups that could not be discovered.
	notes io.Writer

	caps *templates.Capabilities // discovered once
}

// capabilities returns .Capabilities as the controller would give it to
// templates: discovered from the cluster (once per session), or
// reconcile.OfflineCapabilities offline. API groups that could not be
// discovered (an aggregated API server that does not answer) are left
// out with a note, as the controller leaves them out.
func (s *session) capabilities(ctx context.Context) (*templates.Capabilities, error) {
	if s.discovery == nil {
		return reconcile.OfflineCapabilities(), nil
	}
	if s.caps != nil {
		return s.caps, nil
	}
	caps, err := reconcile.DiscoverCapabilities(ctx, s.discovery)
	if caps == nil {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(s.notes, "note: .Capabilities lacks what could not be discovered: %v\n", err)
	}
	s.caps = caps
	return caps, nil
}

// renderInput builds comp's render input with reconcile.RenderInput, as
// the controller does: online, .Composition.UID and .Release.IsUpgrade come
// from the live Composition of the same name (none when it does not exist
// yet) and .Capabilities from discovery; offline, there is no UID,
// .Release.IsInstall is true and .Capabilities is the built-in list.
func (s *session) renderInput(ctx context.Context, comp *v1alpha1.Composition) (templates.Input, error) {
	caps, err := s.capabilities(ctx)
	if err != nil {
		return templates.Input{}, err
	}
	var live *reconcile.LiveComposition
	if s.client != nil {
		c := &v1alpha1.Composition{}
		switch err := s.client.Get(ctx, client.ObjectKeyFromObject(comp), c); {
		case err == nil:
			live = reconcile.Live(c)
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			// Not created yet, or stencil is not installed there: the
			// controller's first render is an install with no UID.
			fmt.Fprintf(s.notes, "note: Composition %s/%s does not exist yet: rendered as its first install (no .Composition.UID, .Release.IsInstall true)\n", comp.Namespace, comp.Name)
		default:
			return templates.Input{}, fmt.Errorf("read the live Composition (for .Composition.UID and .Release.IsUpgrade): %w", err)
		}
	}
	return reconcile.RenderInput(comp, live, caps), nil
}

// connect returns a session on the cluster of the kubeconfig flags, failing
// when it cannot be reached within a few seconds.
func connect(kube *genericclioptions.ConfigFlags) (*session, error) {
	s, err := offline(kube)
	if err != nil {
		return nil, err
	}
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Errorf("reach the cluster: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	if s.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if s.mapper, err = apiutil.NewDynamicRESTMapper(cfg, hc); err != nil {
		return nil, err
	}
	if s.client, err = client.New(cfg, client.Options{Scheme: s.scheme, Mapper: s.mapper}); err != nil {
		return nil, err
	}
	return s, nil
}

// offline returns a session with no cluster: the built-in kinds of
// templates.BuiltinKubeVersion and stencil's own.
func offline(kube *genericclioptions.ConfigFlags) (*session, error) {
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return nil, err
	}
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return &session{scheme: scheme, namespace: ns, mapper: reconcile.OfflineRESTMapper(), notes: io.Discard}, nil
}

// readCompositions reads every Composition in a multi-document YAML file
// ("-" is stdin). Empty documents are skipped; any other kind is an error.
func readCompositions(path string, stdin io.Reader, defaultNamespace string) ([]*v1alpha1.Composition, error) {
	data, err := readFile(path, stdin)
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.Composition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		c := &v1alpha1.Composition{}
		if err := yaml.UnmarshalStrict(doc, c); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if c.Kind == "" && c.Name == "" {
			continue // only comments
		}
		if c.Kind != "Composition" || c.APIVersion != v1alpha1.GroupVersion.String() {
			return nil, fmt.Errorf("%s: document %d is %s %s, want a %s Composition", path, i, c.APIVersion, c.Kind, v1alpha1.GroupVersion)
		}
		if c.Namespace == "" {
			c.Namespace = defaultNamespace
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no Composition", path)
	}
	return out, nil
}

func readFile(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// loadBundle loads the bundle named name: from a folder or a Bundle
// manifest when from is set, else from the cluster.
func loadBundle(ctx context.Context, s *session, from, name string) (*templates.Bundle, error) {
	if from == "" {
		if s.client == nil {
			return nil, fmt.Errorf("no --bundle given and no cluster to read Bundle %q from", name)
		}
		b := &v1alpha1.Bundle{}
		if err := s.client.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
			return nil, fmt.Errorf("read Bundle %s: %w", name, err)
		}
		return templates.LoadObject(b)
	}
	info, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return loadFolder(from, name)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict(data, b); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if b.Kind != "Bundle" {
		return nil, fmt.Errorf("%s is a %s, want a Bundle manifest or a bundle folder", from, b.Kind)
	}
	b.Name = name
	return templates.LoadObject(b)
}

// bundleName is the name a folder's bundle gets by default.
func bundleName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Base(dir)
	}
	return filepath.Base(abs)
}
