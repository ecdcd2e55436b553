package conversion

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/engine"
)

// Converter converts the instances of one published kind between its
// versions (publish/conversion's *Converter).
type Converter interface {
	// Convert returns obj, an instance's whole content whose apiVersion
	// names its version, as a new object in version toVersion. An error
	// names the version, the field and the expression that failed.
	Convert(obj map[string]any, toVersion string) (map[string]any, error)
}

// contextConverter is a Converter that stops when a context ends: the
// review's, which ends when the API server gives up on it.
type contextConverter interface {
	ConvertContext(ctx context.Context, obj map[string]any, toVersion string) (map[string]any, error)
}

// Builder builds the Converter of a Bundle's published kind from its
// name and spec (publish.Converter).
type Builder func(bundleName string, spec v1alpha1.BundleSpec) (Converter, error)

// Bounds of the converters kept.
const (
	defaultCacheSize = 256
	converterTTL     = time.Hour
)

// Handler answers the API server's ConversionReviews (see the package
// doc).
type Handler struct {
	bundles, crds client.Reader
	tokens        Tokens
	build         Builder
	// converters holds a built converter (or the error building it) per
	// convKey.
	converters *cache.LRUExpireCache
}

var _ http.Handler = (*Handler)(nil)

// New returns the handler: bundles lists the Bundles (the manager's
// cached client), crds reads the CRDs' metadata when several Bundles
// claim a kind (the API reader), tokens says whose token a request's
// path holds (CRDTokens), and build makes a Bundle's converter.
func New(bundles, crds client.Reader, tokens Tokens, build Builder) *Handler {
	return &Handler{bundles: bundles, crds: crds, tokens: tokens, build: build, converters: cache.NewLRUExpireCache(defaultCacheSize)}
}

// Kind is the group and kind whose objects a request to path may
// convert: those of the CRD whose token path holds
// (publish.ConversionPath); false for any other path.
func Kind(ctx context.Context, tokens Tokens, path string) (schema.GroupKind, bool) {
	token, ok := publish.ParseConversionPath(path)
	if !ok {
		return schema.GroupKind{}, false
	}
	return tokens.Kind(ctx, token)
}

// convKey names a Bundle's content: its converter changes only with it.
type convKey struct {
	name, revision string
	generation     int64
}

// built is a converter, or why there is none.
type built struct {
	conv Converter
	err  error
}

// ServeHTTP decodes a ConversionReview, converts its objects and
// answers the review. A request whose path holds no token of a CRD
// stencil keeps is answered 404 before its body is read.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gk, ok := Kind(r.Context(), h.tokens, r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "stencil: a ConversionReview is POSTed", http.StatusMethodNotAllowed)
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "stencil: the body is not a ConversionReview with a request", http.StatusBadRequest)
		return
	}
	res := &apiextensionsv1.ConversionResponse{UID: review.Request.UID}
	res.ConvertedObjects, res.Result = h.convert(r.Context(), gk, review.Request)
	out := &apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: res}
	if out.APIVersion == "" {
		out.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview"))
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		ctrl.LoggerFrom(r.Context()).V(1).Info("could not write a ConversionReview response", "error", err.Error())
	}
}

// convert converts every object of req, each of kind gk, to its desired
// version; one object that does not convert fails the review, as the API
// server takes all of them or none.
func (h *Handler) convert(ctx context.Context, gk schema.GroupKind, req *apiextensionsv1.ConversionRequest) ([]runtime.RawExtension, metav1.Status) {
	out := make([]runtime.RawExtension, 0, len(req.Objects))
	for _, o := range req.Objects {
		converted, err := h.convertOne(ctx, gk, o.Raw, req.DesiredAPIVersion)
		if err != nil {
			return nil, failure(err.Error())
		}
		out = append(out, runtime.RawExtension{Raw: converted})
	}
	return out, metav1.Status{Status: metav1.StatusSuccess}
}

// convertOne converts one object's JSON, of kind gk, to version
// desired.
func (h *Handler) convertOne(ctx context.Context, gk schema.GroupKind, raw []byte, desired string) ([]byte, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("stencil: an object of the review is not an object: %w", err)
	}
	gvk := obj.GroupVersionKind()
	what := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
	if gvk.GroupKind() != gk {
		return nil, fmt.Errorf("stencil: convert %s: it is of %s, and the token of this conversion path is the CustomResourceDefinition of %s's, which converts no other kind",
			what, gvk.GroupKind(), gk)
	}
	if obj.GetAPIVersion() == desired {
		return raw, nil
	}
	to, err := parseVersion(desired, gvk.Group)
	if err != nil {
		return nil, fmt.Errorf("stencil: convert %s: %w", what, err)
	}
	conv, err := h.converter(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("stencil: convert %s from %s to %s: %w", what, gvk.Version, to, err)
	}
	var content map[string]any
	if cc, ok := conv.(contextConverter); ok {
		content, err = cc.ConvertContext(ctx, obj.UnstructuredContent(), to)
	} else {
		content, err = conv.Convert(obj.UnstructuredContent(), to)
	}
	if err != nil {
		return nil, fmt.Errorf("stencil: convert %s from %s to %s: %w", what, gvk.Version, to, err)
	}
	result := &unstructured.Unstructured{Object: content}
	// The API server refuses a change of metadata but labels and
	// annotations: it is kept as it came, with the annotations the
	// converter set (what the target version cannot hold).
	annotations := result.GetAnnotations()
	result.Object["metadata"] = obj.Object["metadata"]
	result.SetAnnotations(annotations)
	result.SetAPIVersion(desired)
	return result.MarshalJSON()
}

// parseVersion is the version of desired (group/version), which must be
// of group.
func parseVersion(desired, group string) (string, error) {
	gv, err := schema.ParseGroupVersion(desired)
	switch {
	case err != nil:
		return "", fmt.Errorf("desired apiVersion %q: %w", desired, err)
	case gv.Group != group:
		return "", fmt.Errorf("desired apiVersion %s is of another group than %s", desired, group)
	}
	return gv.Version, nil
}

// converter is the converter of the Bundle that publishes obj's kind,
// built once per Bundle content.
func (h *Handler) converter(ctx context.Context, obj *unstructured.Unstructured) (Converter, error) {
	gvk := obj.GroupVersionKind()
	b, claimants, err := engine.PublishingBundle(ctx, h.bundles, h.crds, gvk)
	switch {
	case err != nil:
		return nil, err
	case b == nil && len(claimants) > 0:
		return nil, fmt.Errorf("several Bundles publish %s (%s) and its CustomResourceDefinition names none of them", gvk.GroupKind(), strings.Join(claimants, ", "))
	case b == nil:
		return nil, fmt.Errorf("no Bundle publishes %s in version %s", gvk.GroupKind(), gvk.Version)
	}
	key := convKey{name: b.Name, generation: b.Generation, revision: b.Status.Revision}
	if v, ok := h.converters.Get(key); ok {
		c := v.(built)
		return c.conv, c.err
	}
	conv, err := h.build(b.Name, b.Spec)
	if err != nil {
		err = fmt.Errorf("the conversion of Bundle %s: %w", b.Name, err)
	}
	h.converters.Add(key, built{conv: conv, err: err}, converterTTL)
	return conv, err
}

// failure is a review's result saying msg.
func failure(msg string) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Message: msg}
}
