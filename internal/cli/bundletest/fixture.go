package bundletest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/templates"
)

// The parent a case renders for when it names none.
const (
	DefaultName      = "release-name"
	DefaultNamespace = "default"
)

// checkParent defaults the parent and checks it against bundle b.
func checkParent(pa *Parent, p *field.Path, b *templates.Bundle) field.ErrorList {
	var errs field.ErrorList
	if pa.Name == "" {
		pa.Name = DefaultName
	}
	if pa.Namespace == "" {
		pa.Namespace = DefaultNamespace
	}
	for _, msg := range validation.IsDNS1123Subdomain(pa.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), pa.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(pa.Namespace) {
		errs = append(errs, field.Invalid(p.Child("namespace"), pa.Namespace, msg))
	}
	if pa.Kind == "Composition" && pa.APIVersion == "" {
		pa.Kind = ""
	}
	if pa.Kind == "" {
		if pa.APIVersion != "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), pa.APIVersion, "only for an instance of the kind the bundle publishes (parent.kind)"))
		}
		return errs
	}
	api := b.Spec().API
	if api == nil {
		return append(errs, field.Invalid(p.Child("kind"), pa.Kind, "the bundle publishes no kind (api: in stencil.yaml): leave kind out to render for a Composition"))
	}
	if pa.Kind != api.Kind {
		return append(errs, field.NotSupported(p.Child("kind"), pa.Kind, []string{"Composition", api.Kind}))
	}
	defaulted := publish.Defaulted(*api)
	if pa.APIVersion == "" {
		pa.APIVersion = api.Group + "/" + publish.RenderVersion(defaulted)
	} else if gv, err := schema.ParseGroupVersion(pa.APIVersion); err != nil || gv.Group != api.Group {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), pa.APIVersion, fmt.Sprintf("want %s/VERSION, a version of the kind the bundle publishes", api.Group)))
	}
	return errs
}

// kubeVersionPattern is a Kubernetes version: v1.30.2, 1.30.2, v1.31.0-rc.1.
var kubeVersionPattern = regexp.MustCompile(`^v?([0-9]+)\.([0-9]+)\.[0-9]+([-+][0-9A-Za-z.+-]*)?$`)

// capabilities builds a case's .Capabilities from the offline ones; nil
// when the case gives none.
func capabilities(c *Capabilities, p *field.Path) (*templates.Capabilities, field.ErrorList) {
	if c == nil {
		return nil, nil
	}
	var errs field.ErrorList
	caps := cluster.OfflineCapabilities()
	caps.APIVersions = slices.Clone(caps.APIVersions)
	if c.KubeVersion != "" {
		m := kubeVersionPattern.FindStringSubmatch(c.KubeVersion)
		if m == nil {
			errs = append(errs, field.Invalid(p.Child("kubeVersion"), c.KubeVersion, "want a Kubernetes version such as v1.30.2"))
		} else {
			caps.KubeVersion = templates.KubeVersion{Version: "v" + strings.TrimPrefix(c.KubeVersion, "v"), Major: m[1], Minor: m[2]}
		}
	}
	for i, v := range c.APIVersions {
		if msg := checkAPIVersion(v); msg != "" {
			errs = append(errs, field.Invalid(p.Child("apiVersions").Index(i), v, msg))
			continue
		}
		caps.APIVersions = append(caps.APIVersions, v)
		if i := strings.LastIndexByte(v, '/'); i > 0 && isKind(v[i+1:]) {
			// A kind's group/version is served with it.
			caps.APIVersions = append(caps.APIVersions, v[:i])
		}
	}
	for i, v := range c.WithoutAPIVersions {
		if msg := checkAPIVersion(v); msg != "" {
			errs = append(errs, field.Invalid(p.Child("withoutAPIVersions").Index(i), v, msg))
			continue
		}
		caps.APIVersions = slices.DeleteFunc(caps.APIVersions, func(s string) bool {
			return s == v || strings.HasPrefix(s, v+"/") && !strings.Contains(s[len(v)+1:], "/") && isKind(s[len(v)+1:])
		})
	}
	for i, gk := range c.ClusterScoped {
		group, kind, ok := strings.Cut(gk, "/")
		if !ok || !isKind(kind) || strings.Contains(group, "/") {
			errs = append(errs, field.Invalid(p.Child("clusterScoped").Index(i), gk, "want group/Kind, such as example.com/Widget (/Kind for the core group)"))
			continue
		}
		caps.ClusterScopedKinds = append(caps.ClusterScopedKinds, gk)
	}
	slices.Sort(caps.APIVersions)
	caps.APIVersions = slices.Compact(caps.APIVersions)
	return caps, errs
}

// checkAPIVersion says what is wrong with an entry of
// .Capabilities.APIVersions, or "".
func checkAPIVersion(v string) string {
	const want = "want group/version or group/version/Kind, such as monitoring.coreos.com/v1/ServiceMonitor"
	gv := v
	if i := strings.LastIndexByte(v, '/'); i > 0 && isKind(v[i+1:]) {
		gv = v[:i]
	}
	parsed, err := schema.ParseGroupVersion(gv)
	if err != nil || strings.Count(gv, "/") > 1 || !strings.HasPrefix(parsed.Version, "v") {
		return want
	}
	return ""
}

// isKind says whether s looks like a kind: CamelCase, first letter
// upper case.
func isKind(s string) bool {
	return s != "" && s[0] >= 'A' && s[0] <= 'Z'
}

// lookupObjects reads a case's lookups.
func lookupObjects(raw []json.RawMessage, p *field.Path) ([]*unstructured.Unstructured, field.ErrorList) {
	var out []*unstructured.Unstructured
	var errs field.ErrorList
	for i, r := range raw {
		ip := p.Index(i)
		var obj map[string]any
		if err := utiljson.Unmarshal(r, &obj); err != nil || obj == nil {
			errs = append(errs, field.Invalid(ip, omit, "want an object with apiVersion, kind and metadata.name"))
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		missing := ""
		switch {
		case u.GetAPIVersion() == "":
			missing = "apiVersion"
		case u.GetKind() == "":
			missing = "kind"
		case u.GetName() == "":
			missing = "metadata.name"
		}
		if missing != "" {
			errs = append(errs, field.Required(ip.Child(missing), "the object a lookup answers has an apiVersion, a kind and a metadata.name"))
			continue
		}
		out = append(out, u)
	}
	return out, errs
}

// observedMembers reads a case's observed members.
func observedMembers(raw map[string]json.RawMessage, p *field.Path) (map[string]map[string]any, field.ErrorList) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := map[string]map[string]any{}
	var errs field.ErrorList
	for _, id := range slices.Sorted(maps.Keys(raw)) {
		var m map[string]any
		if err := utiljson.Unmarshal(raw[id], &m); err != nil || m == nil {
			errs = append(errs, field.Invalid(p.Key(id), omit, "want the member's live fields, an object such as {spec: {clusterIP: 10.0.0.10}}"))
			continue
		}
		out[id] = m
	}
	return out, errs
}
