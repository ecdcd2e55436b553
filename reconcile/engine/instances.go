package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/publish/conversion"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// The values an instance of a published kind renders with. Instances are
// read in the kind's render version as the Bundle has it now
// (publish.GVK); a revision from before the Bundle moved its render
// version (v1 → v2) has templates, and a values schema, written against
// the version it had. A parent still on such a revision (pinned, held,
// not yet reached by a rollout, or in the moment before the rollout
// controller moves it) is rendered with its spec in that version.

// Bounds of the converters kept (one per Bundle generation).
const (
	convertersKept = 64
	converterTTL   = time.Hour
)

// ConversionError is an instance that does not convert to the version
// its revision renders: the Bundle no longer has that version, or its
// rules fail on the instance.
type ConversionError struct {
	// Message names the instance, the versions and why.
	Message string
}

func (e *ConversionError) Error() string { return e.Message }

// RenderValues are the values parent renders with loaded: its
// spec.values, or, for an instance of a published kind read in another
// version than the render version of loaded's spec.api, its spec
// converted to that version by the rules of its Bundle as the cache holds
// it now, as the API server would answer a read in that version. An
// instance that does not convert is a *ConversionError.
func (e *Engine) RenderValues(ctx context.Context, parent applyset.Parent, loaded *templates.Bundle) (*apiextensionsv1.JSON, error) {
	values := parent.ParentSpec().Values
	inst, ok := parent.(*applyset.Instance)
	api := loaded.API()
	if !ok || api == nil {
		return values, nil
	}
	from, to := parent.ParentGVK().Version, publish.RenderVersion(*api)
	if from == to {
		return values, nil
	}
	b := &v1alpha1.Bundle{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: parent.ParentSpec().Bundle}, b); err != nil {
		return nil, fmt.Errorf("read Bundle %s: %w", parent.ParentSpec().Bundle, err)
	}
	what := fmt.Sprintf("%s %s/%s", parent.ParentGVK().Kind, parent.GetNamespace(), parent.GetName())
	conv, err := e.converter(b)
	if err != nil {
		return nil, &ConversionError{Message: fmt.Sprintf("%s is rendered by revision %s, written against %s, and read in %s; Bundle %s's versions do not convert: %v",
			what, loaded.Revision(), to, from, b.Name, err)}
	}
	out, err := conv.ConvertContext(ctx, inst.Object, to)
	if err != nil {
		return nil, &ConversionError{Message: fmt.Sprintf("%s is rendered by revision %s, written against %s: %v", what, loaded.Revision(), to, err)}
	}
	spec, ok := out["spec"]
	if !ok || spec == nil {
		return nil, nil
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("%s's spec in %s: %w", what, to, err)
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

// converters keeps the Bundles' converters (publish.Converter), one per
// Bundle generation; the zero value is ready to use.
type converters struct {
	once sync.Once
	lru  *cache.LRUExpireCache
}

// built is a converter built, or the error building it.
type built struct {
	c   *conversion.Converter
	err error
}

// converter is b's converter, built once per generation of b.
func (e *Engine) converter(b *v1alpha1.Bundle) (*conversion.Converter, error) {
	cs := &e.converters
	cs.once.Do(func() { cs.lru = cache.NewLRUExpireCache(convertersKept) })
	key := fmt.Sprintf("%s/%s/%d", b.Name, b.UID, b.Generation)
	if v, ok := cs.lru.Get(key); ok {
		got := v.(built)
		return got.c, got.err
	}
	c, err := publish.Converter(b.Name, b.Spec)
	cs.lru.Add(key, built{c, err}, converterTTL)
	return c, err
}
