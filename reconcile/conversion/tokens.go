package conversion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stencil-dev/stencil/publish"
)

// Tokens looks up the token of a conversion path
// (publish.ConversionPath): the capability that makes a caller of the
// webhook the API server converting one CRD's objects.
type Tokens interface {
	// Kind is the group and kind of the CRD whose conversion webhook's
	// path holds token; false when no CRD stencil keeps has it.
	Kind(ctx context.Context, token string) (schema.GroupKind, bool)
}

// tokenIndex indexes the cached CRDs by the SHA-256 of their token: a
// token is found by a map lookup of its hash, never compared byte by
// byte.
const tokenIndex = "conversion.stencil.dev/token-sha256"

// tokenWait bounds how long a lookup waits for the cache's first list
// (the controller just started).
const tokenWait = 10 * time.Second

// CRDTokens are the tokens of the CRDs stencil keeps (labelled
// publish.LabelBundle) with a Webhook conversion, from a cache of them of
// its own: a manager.Runnable that runs on every replica, as every
// replica serves the webhook (the Bundle controller, which writes the
// tokens, runs on the leader only). The cache keeps of each CRD only its
// name, labels, group, kind and conversion, and lists and watches CRDs as
// the controller (which may: it keeps them).
type CRDTokens struct {
	cache cache.Cache
}

var (
	_ Tokens                         = (*CRDTokens)(nil)
	_ manager.Runnable               = (*CRDTokens)(nil)
	_ manager.LeaderElectionRunnable = (*CRDTokens)(nil)
)

// NewCRDTokens returns the tokens of mgr's cluster; add them to mgr
// (mgr.Add) to have them kept.
func NewCRDTokens(mgr ctrl.Manager) (*CRDTokens, error) {
	kept, err := labels.NewRequirement(publish.LabelBundle, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&apiextensionsv1.CustomResourceDefinition{}: {
			Label: labels.NewSelector().Add(*kept), Transform: stripCRD}},
	})
	if err != nil {
		return nil, fmt.Errorf("the cache of the conversion tokens: %w", err)
	}
	if err := c.IndexField(context.Background(), &apiextensionsv1.CustomResourceDefinition{}, tokenIndex, indexToken); err != nil {
		return nil, fmt.Errorf("the index of the conversion tokens: %w", err)
	}
	return &CRDTokens{cache: c}, nil
}

// Start keeps the cache until ctx ends.
func (t *CRDTokens) Start(ctx context.Context) error { return t.cache.Start(ctx) }

// NeedLeaderElection is false: every replica serves conversions.
func (t *CRDTokens) NeedLeaderElection() bool { return false }

// Kind looks token up by its hash. Until the cache has listed the CRDs
// it waits, at most tokenWait; a cache that cannot answer knows no
// token. A token two CRDs share (one copied by hand) is no one's.
func (t *CRDTokens) Kind(ctx context.Context, token string) (schema.GroupKind, bool) {
	ctx, cancel := context.WithTimeout(ctx, tokenWait)
	defer cancel()
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := t.cache.List(ctx, list, client.MatchingFields{tokenIndex: tokenHash(token)}); err != nil || len(list.Items) != 1 {
		return schema.GroupKind{}, false
	}
	crd := &list.Items[0]
	return schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}, true
}

// indexToken is the hash of a CRD's token, if it has one.
func indexToken(o client.Object) []string {
	crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil
	}
	token, ok := publish.ConversionToken(crd)
	if !ok {
		return nil
	}
	return []string{tokenHash(token)}
}

// tokenHash is the SHA-256 of token, in hex.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// stripCRD keeps of a CRD what the tokens need: its schemas may be
// large.
func stripCRD(o any) (any, error) {
	crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return o, nil
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: crd.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: crd.Name, UID: crd.UID, ResourceVersion: crd.ResourceVersion,
			Labels: crd.Labels},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: crd.Spec.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: crd.Spec.Names.Kind}, Conversion: crd.Spec.Conversion},
	}, nil
}
