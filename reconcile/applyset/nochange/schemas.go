package nochange

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

const (
	// schemaIndexTTL is how long the cluster's OpenAPI v3 index (one small
	// request listing every group-version with the hash of its schema) is
	// trusted before it is read again to find changed CRDs. It is read only
	// when a custom kind is compared, at most once per TTL.
	schemaIndexTTL = 30 * time.Second
	// schemaRetryAfter bounds how often a group-version's schema is fetched
	// again because a kind was missing from it or the fetch failed.
	schemaRetryAfter = 10 * time.Second
)

// Schemas types objects for the local server-side apply: built-in kinds
// from the Schemas compiled into client-go (offline, no request), every
// other kind from the cluster's OpenAPI v3 document of its group-version,
// fetched once and cached. A group-version is fetched again when the
// cluster's OpenAPI index shows its hash changed (a CRD of that group was
// created, updated or deleted; the index is read at most once per
// schemaIndexTTL), when stencil itself applied a CRD of that group, or when
// a kind is missing from it (at most once per schemaRetryAfter).
//
// A field manager that cannot be built answers an error: the caller then
// writes, since a wrong skip would leave drift.
type Schemas struct {
	// fieldManager is the manager whose applies are decided.
	fieldManager string
	scheme       *runtime.Scheme
	builtin      managedfields.TypeConverter
	// cluster reads /openapi/v3; nil offline (then only built-in kinds are typed).
	cluster openapi.Client
	now     func() time.Time

	// confirmed settles with the server what the local apply cannot.
	confirmed confirmer
	// decided remembers the objects last found unchanged.
	decided decided

	mu       sync.Mutex
	managers map[schema.GroupVersionKind]cachedManager
	custom   map[schema.GroupVersion]*gvSchema
	index    map[string]openapi.GroupVersion
	indexAt  time.Time
}

// cachedManager is a kind's field manager and the converter it was built on.
type cachedManager struct {
	converter managedfields.TypeConverter
	manager   *managedfields.FieldManager
}

// gvSchema is one group-version's schema as last fetched.
type gvSchema struct {
	url       string // the index entry's URL, with its hash
	converter managedfields.TypeConverter
	kinds     map[schema.GroupVersionKind]bool
	// status holds the kinds served with a status subresource: the API
	// server resets their status on writes to the main resource.
	status    map[schema.GroupVersionKind]bool
	fetchedAt time.Time
	err       error
}

// MaxChanged bounds the field paths a Decision names.
const MaxChanged = 5

// NewSchemas returns schemas deciding the applies of fieldManager, reading
// custom kinds' schemas from cluster (nil: built-in kinds only).
func NewSchemas(cluster openapi.Client, fieldManager string) (*Schemas, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return &Schemas{
		scheme:       s,
		fieldManager: fieldManager,
		builtin:      applyconfigurations.NewTypeConverter(s),
		cluster:      cluster,
		now:          time.Now,
		managers:     map[schema.GroupVersionKind]cachedManager{},
		custom:       map[schema.GroupVersion]*gvSchema{},
	}, nil
}

// typed is what the local apply of one kind needs.
type typed struct {
	manager   *managedfields.FieldManager
	converter managedfields.TypeConverter
	// builtin kinds are also normalised through their Go type.
	builtin bool
	// statusReset: the API server keeps the status of live on writes to
	// the main resource (the kind has a status subresource).
	statusReset bool
}

// resetStatus is the field filter of a kind whose status the API server
// resets on writes to the main resource (it has a status subresource).
func resetStatus(gvk schema.GroupVersionKind) map[fieldpath.APIVersion]fieldpath.Filter {
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))),
	}
}

// forKind returns the field manager and type converter of gvk.
func (s *Schemas) forKind(ctx context.Context, gvk schema.GroupVersionKind) (typed, error) {
	if s.scheme.Recognizes(gvk) {
		// Every built-in kind with a status has a status subresource.
		m, err := s.manager(gvk, s.builtin, true, true)
		return typed{manager: m, converter: s.builtin, builtin: true, statusReset: true}, err
	}
	c, err := s.customSchema(ctx, gvk)
	if err != nil {
		return typed{}, err
	}
	m, err := s.manager(gvk, c.converter, false, c.status[gvk])
	return typed{manager: m, converter: c.converter, statusReset: c.status[gvk]}, err
}

// manager returns the cached field manager of gvk, built on conv.
func (s *Schemas) manager(gvk schema.GroupVersionKind, conv managedfields.TypeConverter, builtin, statusReset bool) (*managedfields.FieldManager, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.managers[gvk]; ok && c.converter == conv {
		return c.manager, nil
	}
	uc := unstructuredConvertor{}
	var (
		m   *managedfields.FieldManager
		err error
	)
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if statusReset {
		reset = resetStatus(gvk)
	}
	if builtin {
		m, err = managedfields.NewDefaultFieldManager(conv, uc, uc, uc, gvk, gvk.GroupVersion(), "", reset)
	} else {
		m, err = managedfields.NewDefaultCRDFieldManager(conv, uc, uc, uc, gvk, gvk.GroupVersion(), "", reset)
	}
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", gvk, err)
	}
	s.managers[gvk] = cachedManager{converter: conv, manager: m}
	return m, nil
}

// customSchema returns the schema of gvk's group-version from the
// cluster's OpenAPI v3, fetching it when it is not cached, stale or lacks
// the kind.
func (s *Schemas) customSchema(ctx context.Context, gvk schema.GroupVersionKind) (*gvSchema, error) {
	if s.cluster == nil {
		return nil, fmt.Errorf("no schema for %s offline", gvk)
	}
	gv := gvk.GroupVersion()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.indexAt) >= schemaIndexTTL || s.index == nil {
		if idx, err := s.cluster.Paths(); err == nil {
			s.index, s.indexAt = idx, now
		} else if s.index == nil {
			return nil, fmt.Errorf("read the cluster's OpenAPI v3 index: %w", err)
		}
	}
	entry, ok := s.index[gvPath(gv)]
	if !ok {
		return nil, fmt.Errorf("the cluster serves no OpenAPI v3 schema for %s", gv)
	}
	url := serverURL(entry)
	c := s.custom[gv]
	retry := c != nil && (c.err != nil || !c.kinds[gvk]) && now.Sub(c.fetchedAt) >= schemaRetryAfter
	if c == nil || c.url != url || retry {
		c = fetchSchema(ctx, entry, url, now)
		s.custom[gv] = c
		s.decided.forget()
		for k := range s.managers {
			if k.GroupVersion() == gv {
				delete(s.managers, k)
			}
		}
	}
	switch {
	case c.err != nil:
		return nil, c.err
	case !c.kinds[gvk]:
		return nil, fmt.Errorf("the cluster's OpenAPI v3 schema of %s has no kind %s", gv, gvk.Kind)
	}
	return c, nil
}

// ForgetGroup drops the cached schemas of group, and every remembered
// decision: stencil just applied one of its CRDs. The index is read again
// on the next custom kind.
func (s *Schemas) ForgetGroup(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gv := range s.custom {
		if gv.Group == group {
			delete(s.custom, gv)
		}
	}
	for k := range s.managers {
		if k.Group == group && !s.scheme.Recognizes(k) {
			delete(s.managers, k)
		}
	}
	s.indexAt = time.Time{}
	s.decided.forget()
}

func fetchSchema(ctx context.Context, entry openapi.GroupVersion, url string, now time.Time) *gvSchema {
	c := &gvSchema{url: url, fetchedAt: now, kinds: map[schema.GroupVersionKind]bool{}, status: map[schema.GroupVersionKind]bool{}}
	raw, err := openapi.ToGroupVersionWithContext(entry).SchemaWithContext(ctx, "application/json")
	if err != nil {
		c.err = fmt.Errorf("read OpenAPI v3 schema: %w", err)
		return c
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(raw, &doc); err != nil {
		c.err = fmt.Errorf("parse OpenAPI v3 schema: %w", err)
		return c
	}
	if doc.Components == nil {
		c.err = fmt.Errorf("OpenAPI v3 schema has no components")
		return c
	}
	defs := map[string]*spec.Schema{}
	for name, sch := range doc.Components.Schemas {
		defs[name] = sch
		for _, k := range gvksOf(sch.Extensions) {
			c.kinds[k] = true
		}
	}
	if doc.Paths != nil {
		for p, item := range doc.Paths.Paths {
			if item == nil || !strings.HasSuffix(p, "/{name}/status") {
				continue
			}
			for _, op := range []*spec3.Operation{item.Get, item.Put, item.Patch} {
				if op != nil {
					for _, k := range gvksOf(op.Extensions) {
						c.status[k] = true
					}
				}
			}
		}
	}
	if c.converter, err = managedfields.NewTypeConverter(defs, false); err != nil {
		c.err = fmt.Errorf("build the type converter: %w", err)
	}
	return c
}

// gvksOf reads the x-kubernetes-group-version-kind extension of a schema
// (a list) or of an operation (one).
func gvksOf(ext spec.Extensions) []schema.GroupVersionKind {
	raw, ok := ext["x-kubernetes-group-version-kind"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var out []schema.GroupVersionKind
	if json.Unmarshal(b, &out) == nil {
		return out
	}
	var one schema.GroupVersionKind
	if json.Unmarshal(b, &one) == nil && one.Kind != "" {
		return []schema.GroupVersionKind{one}
	}
	return nil
}

// gvPath is the key of gv in the OpenAPI v3 index.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// serverURL is an index entry's URL, which carries its schema's hash.
func serverURL(gv openapi.GroupVersion) string {
	if u, ok := gv.(interface{ ServerRelativeURL() string }); ok {
		return u.ServerRelativeURL()
	}
	return ""
}

// unstructuredConvertor serves the field manager for objects of one
// version, kept unstructured: conversion only relabels, defaulting does
// nothing (defaults the server adds are in the live object already, and
// the merge keeps them), creation makes an empty object of the kind.
type unstructuredConvertor struct{}

var (
	_ runtime.ObjectConvertor = unstructuredConvertor{}
	_ runtime.ObjectDefaulter = unstructuredConvertor{}
	_ runtime.ObjectCreater   = unstructuredConvertor{}
)

func (unstructuredConvertor) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk := u.GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok {
		return nil, fmt.Errorf("cannot convert %s to %v", gvk, target)
	}
	if to == gvk {
		return u, nil
	}
	return nil, fmt.Errorf("cannot convert %s to %s locally", gvk, to)
}

func (unstructuredConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredConvertor) Default(runtime.Object) {}

func (unstructuredConvertor) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
