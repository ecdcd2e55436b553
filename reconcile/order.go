package reconcile

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
	"MutatingWebhookConfiguration":   unknownRank + 1,
	"ValidatingWebhookConfiguration": unknownRank + 1,
}

// unknownRank is the rank of kinds not in kindRanks.
const unknownRank = 12

func kindRank(kind string) int {
	if r, ok := kindRanks[kind]; ok {
		return r
	}
	return unknownRank
}

// sortForApply orders objects by kind rank, keeping the render order within
// a rank, so the same render always gives the same plan. Helm hooks come
// after every ordinary object, those with a pre- point first, then by
// weight (helm.sh/hook-weight, lowest first), then kind rank: the apply
// phase picks the hooks that run, before or after the ordinary objects.
func sortForApply(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return compareStageKeys(stageKey(a), stageKey(b))
	})
}

// stageKey orders an object: ordinary objects, then hooks with a pre-
// point, then the other hooks; hooks by weight; everything by kind rank.
func stageKey(u *unstructured.Unstructured) [3]int {
	if !isHook(u) {
		return [3]int{0, 0, kindRank(u.GetKind())}
	}
	points, _ := hookPoints(u)
	section := 2
	if slices.ContainsFunc(points, func(p string) bool { return strings.HasPrefix(p, "pre-") }) {
		section = 1
	}
	return [3]int{section, hookWeight(u), kindRank(u.GetKind())}
}

func compareStageKeys(a, b [3]int) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// stages splits objects sorted by sortForApply into runs of equal stage key
// (kind rank; for hooks, weight and kind rank): the objects of one stage are
// applied concurrently, stages one after another.
func stages(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
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
