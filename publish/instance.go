package publish

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// InstanceSpec is the CompositionSpec an instance of a published kind
// stands for: Bundle is bundleName; Values is the instance's spec (nil
// when it has none); the knobs are api.Defaults (api may be nil: no
// defaults), each overridden by its annotation on the instance
// (AnnotationSuspend, AnnotationPrune, AnnotationDeletionPolicy,
// AnnotationServiceAccountName, AnnotationBundleRevision), then defaulted as the Composition CRD
// defaults them (prune true, deletion policy Delete). An annotation with
// a value it does not allow is an error naming the annotation and the
// values it allows, never the value.
//
// With an error, the spec returned is still usable for what needs no
// values and no annotation: the Bundle's defaults alone (the controller
// finalizes a deleted instance with them).
func InstanceSpec(bundleName string, api *v1alpha1.BundleAPI, obj *unstructured.Unstructured) (v1alpha1.CompositionSpec, error) {
	spec := v1alpha1.CompositionSpec{Bundle: bundleName}
	if api != nil {
		d := api.Defaults.DeepCopy()
		spec.ServiceAccountName, spec.Suspend, spec.Prune, spec.DeletionPolicy = d.ServiceAccountName, d.Suspend, d.Prune, d.DeletionPolicy
	}
	err := values(&spec, obj)
	if err == nil {
		annotated := *spec.DeepCopy()
		if err = applyAnnotations(&annotated, obj.GetAnnotations()); err == nil {
			spec = annotated
		}
	}
	if err != nil {
		err = fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	if spec.Prune == nil {
		t := true
		spec.Prune = &t
	}
	if spec.DeletionPolicy == "" {
		spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	}
	return spec, err
}

// values sets spec.Values to the instance's spec, which must be an object.
func values(spec *v1alpha1.CompositionSpec, obj *unstructured.Unstructured) error {
	v, ok := obj.Object["spec"]
	if !ok || v == nil {
		return nil
	}
	if _, isMap := v.(map[string]any); !isMap {
		return fmt.Errorf("spec must be an object")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	spec.Values = &apiextensionsv1.JSON{Raw: raw}
	return nil
}

// applyAnnotations overrides the knobs with the instance's annotations.
func applyAnnotations(spec *v1alpha1.CompositionSpec, ann map[string]string) error {
	if v, ok := ann[AnnotationSuspend]; ok {
		b, err := parseBool(AnnotationSuspend, v)
		if err != nil {
			return err
		}
		spec.Suspend = b
	}
	if v, ok := ann[AnnotationPrune]; ok {
		b, err := parseBool(AnnotationPrune, v)
		if err != nil {
			return err
		}
		spec.Prune = &b
	}
	if v, ok := ann[AnnotationDeletionPolicy]; ok {
		switch p := v1alpha1.DeletionPolicy(v); p {
		case v1alpha1.DeletionPolicyDelete, v1alpha1.DeletionPolicyOrphan:
			spec.DeletionPolicy = p
		default:
			return fmt.Errorf("annotation %s must be Delete or Orphan", AnnotationDeletionPolicy)
		}
	}
	if v, ok := ann[AnnotationServiceAccountName]; ok {
		if len(validation.IsDNS1123Subdomain(v)) > 0 {
			return fmt.Errorf("annotation %s must name a ServiceAccount of the instance's namespace (a DNS subdomain: lower-case letters, digits, '-' and '.')", AnnotationServiceAccountName)
		}
		spec.ServiceAccountName = v
	}
	if v, ok := ann[AnnotationBundleRevision]; ok {
		if len(validation.IsDNS1123Subdomain(v)) > 0 {
			return fmt.Errorf("annotation %s must name a revision of the Bundle (a BundleRevision, as kubectl get bundlerevisions lists them)", AnnotationBundleRevision)
		}
		spec.BundleRevision = v
	}
	return nil
}

// parseBool accepts exactly "true" and "false", as YAML writes them.
func parseBool(annotation, v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("annotation %s must be \"true\" or \"false\"", annotation)
}
