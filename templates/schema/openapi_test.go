package schema

import (
	"strconv"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestSchemaCache: the same schema text is compiled once, other texts
// get their own schema, and the cache stays within schemaCacheSize.
func TestSchemaCache(t *testing.T) {
	schema := func(n int) *apiextensionsv1.JSON {
		return &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"x":{"type":"integer","maximum":` + strconv.Itoa(n) + `}}}`)}
	}
	a, err := NewOpenAPI(schema(1))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := NewOpenAPI(schema(1))
	other, _ := NewOpenAPI(schema(2))
	if a != again {
		t.Error("the same schema text was compiled again")
	}
	if a == other {
		t.Error("two schema texts share a compiled schema")
	}
	for i := range 2 * schemaCacheSize {
		if _, err := NewOpenAPI(schema(100 + i)); err != nil {
			t.Fatal(err)
		}
	}
	schemaCache.Lock()
	n := len(schemaCache.m)
	schemaCache.Unlock()
	if n > schemaCacheSize {
		t.Errorf("%d schemas cached, the bound is %d", n, schemaCacheSize)
	}
	if _, err := NewOpenAPI(&apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"x":{}}}`)}); err == nil {
		t.Error("a schema that is not structural compiled")
	}
}
