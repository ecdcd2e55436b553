package plan

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kindRanks orders kinds for apply, after Flux's ssa/sort.go: what others
// depend on comes first (CRDs, Namespaces, classes, RBAC, ServiceAccounts,
// configuration, Services), then workloads; kinds not listed (custom
// resources among them) come after the workloads, and webhook
// configurations last, so a webhook never blocks the objects it would admit.
// Deletion uses the reverse order.
var kindRanks = map[string]int{
	"CustomResourceDefinition":       0,
	"Namespace":                      1,
	"ClusterClass":                   2,
	"RuntimeClass":                   2,
	"PriorityClass":                  2,
	"StorageClass":                   2,
	"VolumeSnapshotClass":            2,
	"IngressClass":                   2,
	"GatewayClass":                   2,
	"ResourceQuota":                  3,
	"LimitRange":                     3,
	"ServiceAccount":                 4,
	"ClusterRole":                    5,
	"Role":                           5,
	"ClusterRoleBinding":             6,
	"RoleBinding":                    6,
	"ConfigMap":                      7,
	"Secret":                         7,
	"PersistentVolume":               7,
	"PersistentVolumeClaim":          8,
	"Service":                        9,
	"Deployment":                     10,
	"StatefulSet":                    10,
	"DaemonSet":                      10,
	"ReplicaSet":                     10,
	"Job":                            10,
	"CronJob":                        10,
	"HorizontalPodAutoscaler":        11,
	"PodDisruptionBudget":            11,
	"Ingress":                        11,
	"MutatingWebhookConfiguration":   UnknownRank + 1,
	"ValidatingWebhookConfiguration": UnknownRank + 1,
}

// UnknownRank is the rank of kinds not in kindRanks.
const UnknownRank = 12

func KindRank(kind string) int {
	if r, ok := kindRanks[kind]; ok {
		return r
	}
	return UnknownRank
}

// SortForApply orders objects by kind rank, keeping the render order within
// a rank, so the same render always gives the same plan. Helm hooks come
// after every ordinary object, those with a pre- point first, then by
// weight (helm.sh/hook-weight, lowest first), then kind rank: the apply
// phase picks the hooks that run, before or after the ordinary objects.
func SortForApply(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return CompareStageKeys(stageKey(a), stageKey(b))
	})
}

// stageKey orders an object: ordinary objects, then hooks with a pre-
// point, then the other hooks; hooks by weight; everything by kind rank.
func stageKey(u *unstructured.Unstructured) [3]int {
	if !IsHook(u) {
		return [3]int{0, 0, KindRank(u.GetKind())}
	}
	points, _ := HookPoints(u)
	section := 2
	if slices.ContainsFunc(points, func(p string) bool { return strings.HasPrefix(p, "pre-") }) {
		section = 1
	}
	return [3]int{section, HookWeight(u), KindRank(u.GetKind())}
}

func CompareStageKeys(a, b [3]int) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// Stages splits objects sorted by SortForApply into runs of equal stage key
// (kind rank; for hooks, weight and kind rank): the objects of one stage are
// applied concurrently, Stages one after another.
func Stages(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var out [][]*unstructured.Unstructured
	for i := 0; i < len(objs); {
		j := i + 1
		for j < len(objs) && stageKey(objs[j]) == stageKey(objs[i]) {
			j++
		}
		out = append(out, objs[i:j])
		i = j
	}
	return out
}
