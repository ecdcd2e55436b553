package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// This file renders one template snippet with both engines, for the
// differential test of their functions (funcs_test.go) and the check of
// docs/helm.md's table (functable_test.go).

// Outcome is what an engine made of a snippet: the text it printed, or
// the class of its failure.
type Outcome struct {
	Out string
	// Fail is "" when the snippet rendered, "parse" when it did not parse
	// (an unknown function), "exec" when it failed while executing.
	Fail string
	// Err is the engine's message, for a failure.
	Err string `cmp:"-"`
}

func (o Outcome) String() string {
	if o.Fail != "" {
		return o.Fail + " error: " + o.Err
	}
	return fmt.Sprintf("%q", o.Out)
}

// snippetChart is a chart whose one object prints what the snippet
// printed, as base64 (so that any text, a control character or a
// trailing space, comes back as it was): the snippet is a define both
// engines include. values are its values.yaml.
func snippetChart(snippet, values string) map[string]string {
	return map[string]string{
		"Chart.yaml":           "apiVersion: v2\nname: diff\nversion: 0.1.0\nappVersion: \"1.0\"\n",
		"values.yaml":          values,
		"templates/_case.tpl":  `{{- define "case" -}}` + snippet + `{{- end -}}`,
		"templates/out.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\ndata:\n  out: {{ include \"case\" . | b64enc | quote }}\n",
		"files/a.txt":          "line one\nline two\n",
		"files/conf/b.yaml":    "b: x\n",
		"files/conf/c.toml":    "c = \"y\"\n",
		"templates/_other.tpl": `{{- define "other" -}}other {{ . }}{{- end -}}`,
	}
}

// StencilSnippet renders snippet with stencil's engine.
func StencilSnippet(snippet, values string) Outcome {
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "diff"},
		Spec: v1alpha1.BundleSpec{Files: snippetChart(snippet, values)}})
	if err != nil {
		return Outcome{Fail: "parse", Err: err.Error()}
	}
	objs, err := templates.Render(b, templates.Input{Composition: release})
	if err != nil {
		var re *templates.RenderError
		if errors.As(err, &re) && strings.Contains(re.Msg, "not defined") {
			return Outcome{Fail: "parse", Err: err.Error()}
		}
		return Outcome{Fail: "exec", Err: err.Error()}
	}
	for _, o := range objs {
		if o.GetName() == "out" {
			s, _, _ := unstructuredString(o.Object, "data", "out")
			return decodeOut(s)
		}
	}
	return Outcome{Fail: "exec", Err: "no object out"}
}

// snippetCapabilities are helmCapabilities with stencil's offline
// Kubernetes version and Helm's version as a release of Helm v4.3.1
// prints it, so that .Capabilities print the same in both (Helm's own
// defaults differ in a test binary: Kubernetes v1.20.0, Helm "v4.3").
var snippetCapabilities = func() *common.Capabilities {
	caps := *helmCapabilities
	stencil := templates.DefaultCapabilities()
	kv, err := common.ParseKubeVersion(stencil.KubeVersion.Version)
	if err != nil {
		panic(err)
	}
	caps.KubeVersion = *kv
	caps.HelmVersion.Version, caps.HelmVersion.KubeClientVersion = templates.HelmRelease, "v1.37"
	caps.HelmVersion.GitCommit, caps.HelmVersion.GitTreeState, caps.HelmVersion.GoVersion = "", "", ""
	return &caps
}()

// HelmSnippet renders snippet with Helm's engine, values prepared as
// `helm template` prepares them.
func HelmSnippet(snippet, values string) Outcome {
	var files []*archive.BufferedFile
	for name, data := range snippetChart(snippet, values) {
		files = append(files, &archive.BufferedFile{Name: name, Data: []byte(data)})
	}
	c, err := loaderv2.LoadFiles(files)
	if err != nil {
		return Outcome{Fail: "load", Err: err.Error()}
	}
	opts := common.ReleaseOptions{Name: release.Name, Namespace: release.Namespace, Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValuesWithSchemaValidation(c, map[string]any{}, opts, snippetCapabilities, false)
	if err != nil {
		return Outcome{Fail: "load", Err: err.Error()}
	}
	out, err := engine.Render(c, vals)
	if err != nil {
		if strings.HasPrefix(err.Error(), "parse error") {
			return Outcome{Fail: "parse", Err: err.Error()}
		}
		return Outcome{Fail: "exec", Err: err.Error()}
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(out["diff/templates/out.yaml"]), &obj); err != nil {
		return Outcome{Fail: "exec", Err: err.Error()}
	}
	s, _, _ := unstructuredString(obj, "data", "out")
	return decodeOut(s)
}

func unstructuredString(m map[string]any, path ...string) (string, bool, error) {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return "", false, nil
		}
		v = mm[p]
	}
	s, ok := v.(string)
	return s, ok, nil
}

func decodeOut(s string) Outcome {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return Outcome{Fail: "exec", Err: "the output is not base64: " + err.Error()}
	}
	return Outcome{Out: string(b)}
}
