package observed_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates/observed"
)

// A render reads a member's value, and holds back the object that waits
// for one not observed yet; its Observations list both.
func ExampleLog() {
	l := observed.NewLog(map[string]map[string]any{
		"Service/web": {"spec": map[string]any{"clusterIP": "10.0.0.7"}},
	}, nil, nil, nil)
	ip, _ := l.Func("Service/web", "spec.clusterIP")
	fmt.Println(ip)
	waiter := &unstructured.Unstructured{}
	waiter.SetAPIVersion("v1")
	waiter.SetKind("ConfigMap")
	waiter.SetName("endpoint")
	waiter.SetAnnotations(map[string]string{observed.AnnotationWaitFor: "Service/db spec.clusterIP"})
	kept, held, _ := l.HoldBack([]*unstructured.Unstructured{waiter})
	fmt.Println(len(kept), held)
	obs := l.Observations(held)
	fmt.Println(obs.Reads)
	// Output:
	// 10.0.0.7
	// 0 [ConfigMap/endpoint]
	// [Service/db spec.clusterIP Service/web spec.clusterIP]
}
