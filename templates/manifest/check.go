package manifest

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/kubeapi"
)

// Source is where an object was rendered: a template and the line of
// its output where its document starts (Parse's lines), or, with Line
// 0, a file whose objects no document of a template gave (kustomize's,
// under KustomizationFile).
type Source struct {
	// File is the bundle path of the template (or file) rendered.
	File string
	// Line is the line of its output where the object's document
	// starts, from 1; 0 for a file's objects as a whole.
	Line int
}

// String names the source as file:line, or file for Line 0.
func (s Source) String() string {
	if s.Line == 0 {
		return s.File
	}
	return s.File + ":" + strconv.Itoa(s.Line)
}

// Check enforces the object bounds (MaxObjects, MaxObjectBytes) on objs,
// rendered at sources (one each), and refuses two objects that are one
// once placed in namespace (the Composition's), naming where each was
// rendered. reconcile's placement catches the rest: kinds whose scope
// only the cluster knows. The objects of a template were measured as
// they were parsed (Parse): only those of a Source of Line 0 are
// measured here.
//
// A kind is cluster-scoped when it is a built-in one, one of
// clusterScoped (group/Kind: what the cluster serves cluster-scoped, from
// .Capabilities), or one a CustomResourceDefinition of this render
// declares Cluster: the duplicate is named here, with both templates.
// (Which CRD is believed for a kind's scope when they disagree is the
// plan's to decide; here a rendered CRD only finds more duplicates.)
func Check(objs []*unstructured.Unstructured, sources []Source, namespace string, clusterScoped map[string]bool) error {
	if len(objs) > MaxObjects {
		return &fault.RenderError{Reason: fault.ReasonTooLarge, Msg: fmt.Sprintf("render produced %d objects, more than %d (MaxObjects)", len(objs), MaxObjects)}
	}
	rendered := renderedClusterKinds(objs)
	seen := map[string]int{}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		if sources[i].Line == 0 {
			if n := objectSize(o.Object); n > MaxObjectBytes {
				return objectTooLarge(sources[i].File, 0, fmt.Sprintf("%s %q", gvk.Kind, o.GetName()), n)
			}
		}
		ns := o.GetNamespace()
		switch {
		case kubeapi.ClusterScoped(gvk.Group, gvk.Kind), clusterScoped[gvk.Group+"/"+gvk.Kind], rendered[gvk.Group+"/"+gvk.Kind]:
			ns = "" // placed without one
		case ns == "":
			ns = namespace // where a namespaced object is placed (or a cluster-scoped one, without one either way)
		}
		key := gvk.Group + "/" + gvk.Kind + "/" + ns + "/" + o.GetName()
		if first, ok := seen[key]; ok {
			how := ""
			switch a, b := objs[first].GetNamespace(), o.GetNamespace(); {
			case a == b:
			case a == "" || b == "":
				how = " (once with a namespace, once without)"
			default:
				how = fmt.Sprintf(" (in namespaces %q and %q of a cluster-scoped kind)", a, b)
			}
			return &fault.RenderError{File: sources[i].File, Line: sources[i].Line,
				Msg: fmt.Sprintf("%s %q is rendered twice%s: by %s and by %s", gvk.Kind, o.GetName(), how, sources[first], sources[i])}
		}
		seen[key] = i
	}
	return nil
}

// renderedClusterKinds is the set (group/Kind) of the kinds the
// CustomResourceDefinitions among objs declare cluster-scoped.
func renderedClusterKinds(objs []*unstructured.Unstructured) map[string]bool {
	var out map[string]bool
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		if scope == "Cluster" && kind != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[group+"/"+kind] = true
		}
	}
	return out
}
