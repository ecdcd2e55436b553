package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/gobwas/glob"
	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	luajson "layeh.com/gopher-json"
	"sigs.k8s.io/yaml"
)

// Argo CD's health statuses (gitops-engine's HealthStatusCode).
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// Health is what Argo CD shows of a resource.
type Health struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// ArgoCD is Argo CD's health assessment with the resource customizations
// of one argocd-cm ConfigMap: health.lua scripts by GROUP/KIND key.
type ArgoCD struct {
	scripts map[string]string
}

// LoadArgoCD reads the resource.customizations of the argocd-cm ConfigMap
// in file, as Argo CD's settings manager does.
func LoadArgoCD(file string) (*ArgoCD, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var overrides map[string]struct {
		HealthLua string `json:"health.lua"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["resource.customizations"]), &overrides); err != nil {
		return nil, fmt.Errorf("%s: resource.customizations: %w", file, err)
	}
	a := &ArgoCD{scripts: map[string]string{}}
	for key, o := range overrides {
		if o.HealthLua != "" {
			a.scripts[key] = o.HealthLua
		}
	}
	return a, nil
}

// Keys returns the customization keys that have a health check, sorted.
func (a *ArgoCD) Keys() []string {
	keys := make([]string, 0, len(a.scripts))
	for k := range a.scripts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// key is Argo CD's customization key of a kind: GROUP/KIND, or KIND for
// the core group.
func key(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Group + "/" + gvk.Kind
}

// Matches returns every key whose health check applies to gvk: its exact
// key, else the globs that match it. Argo CD picks any one of several
// matching globs, so more than one is a configuration error.
func (a *ArgoCD) Matches(gvk schema.GroupVersionKind) ([]string, error) {
	k := key(gvk)
	if _, ok := a.scripts[k]; ok {
		return []string{k}, nil
	}
	var out []string
	for _, pattern := range a.Keys() {
		g, err := glob.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("customization key %q: %w", pattern, err)
		}
		if g.Match(k) {
			out = append(out, pattern)
		}
	}
	return out, nil
}

// Health is what Argo CD shows of obj: Progressing while it is being
// deleted (Argo CD decides that before any script), else its health
// check's result. An object no health check matches has no health (nil).
func (a *ArgoCD) Health(obj *unstructured.Unstructured) (*Health, error) {
	if obj.GetDeletionTimestamp() != nil {
		return &Health{Status: Progressing, Message: "Pending deletion"}, nil
	}
	return a.Lua(obj)
}

// Lua runs the health check that matches obj, as Argo CD runs it.
func (a *ArgoCD) Lua(obj *unstructured.Unstructured) (*Health, error) {
	keys, err := a.Matches(obj.GroupVersionKind())
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	if len(keys) > 1 {
		return nil, fmt.Errorf("%s matches several customizations %v: Argo CD would pick one at random", key(obj.GroupVersionKind()), keys)
	}
	return runHealthLua(obj, a.scripts[keys[0]])
}

// runHealthLua runs script with obj as Argo CD does: no library but
// package, base and table, a one-second deadline, the returned table
// read as a health status.
func runHealthLua(obj *unstructured.Unstructured, script string) (*Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj.Object))
	fn, err := l.LoadString(script)
	if err != nil {
		return nil, err
	}
	l.Push(fn)
	if err := l.PCall(0, lua.MultRet, nil); err != nil {
		return nil, err
	}
	switch ret := l.Get(-1); ret.Type() {
	case lua.LTNil:
		return &Health{}, nil
	case lua.LTTable:
		raw, err := luajson.Encode(ret)
		if err != nil {
			return nil, err
		}
		h := &Health{}
		if err := json.Unmarshal(raw, h); err != nil {
			return nil, fmt.Errorf("health %s: %w", raw, err)
		}
		switch h.Status {
		case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
			return h, nil
		}
		return &Health{Status: Unknown, Message: "Lua returned an invalid health status"}, nil
	default:
		return nil, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
}

// toLua is a value of an object as Argo CD hands it to a script: maps
// become tables, lists arrays, numbers (int64 or float64) Lua numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
