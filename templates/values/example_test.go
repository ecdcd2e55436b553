package values_test

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/stencil-dev/stencil/templates/values"
)

// A parent's values merge over the defaults as Helm's: maps key by key,
// lists and scalars replaced, a null deleting the key.
func ExampleMerger_Merge() {
	m := values.Merger{Defaults: map[string]any{
		"image":    map[string]any{"repository": "nginx", "tag": "1.27"},
		"replicas": int64(1),
		"debug":    true,
	}}
	merged, _, err := m.Merge(&apiextensionsv1.JSON{Raw: []byte(`{"image": {"tag": "1.28"}, "replicas": 3, "debug": null}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(merged)
	tag, _ := values.Values(merged).PathValue("image.tag")
	fmt.Println(tag)
	// Output:
	// map[image:map[repository:nginx tag:1.28] replicas:3]
	// 1.28
}
