package conversion_test

import (
	"encoding/json"
	"fmt"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish/conversion"
)

// A kind whose v1 spells replicas as size converts to its storage
// version v2 and back, with a field only v1 has kept in the annotation.
func ExampleConverter_Convert() {
	api := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Versions: []v1alpha1.APIVersion{
		{Name: "v1", Conversion: &v1alpha1.VersionConversion{ToStorage: []v1alpha1.ConversionRule{
			{Move: &v1alpha1.FieldMove{From: "size", To: "replicas"}},
			{Delete: &v1alpha1.FieldDelete{Path: "legacy"}},
		}}},
		{Name: "v2", Storage: true},
	}}
	c, err := conversion.New(api, nil)
	if err != nil {
		panic(err)
	}
	v1 := map[string]any{"apiVersion": "app.example.com/v1", "kind": "AppService",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"size": int64(3), "legacy": "x"}}
	v2, err := c.Convert(v1, "v2")
	if err != nil {
		panic(err)
	}
	fmt.Println(v2["apiVersion"], jsonOf(v2["spec"]))
	back, err := c.Convert(v2, "v1")
	if err != nil {
		panic(err)
	}
	fmt.Println(back["apiVersion"], jsonOf(back["spec"]), back["metadata"])
	// Output:
	// app.example.com/v2 {"replicas":3}
	// app.example.com/v1 {"legacy":"x","size":3} map[name:web]
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
