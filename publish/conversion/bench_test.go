package conversion

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkConvert converts one AppService with ten ports from v1 to
// the storage version v2, as the conversion webhook does for each
// object of a list read in v1.
func BenchmarkConvert(b *testing.B) {
	c := newAppService(b)
	ports := make([]string, 10)
	for i := range ports {
		ports[i] = fmt.Sprintf(`{"name":"p%d","port":%d}`, i, 8000+i)
	}
	obj := object(b, "v1", `{"size":3,"image":"nginx:1.25","legacy":"x","ports":[`+strings.Join(ports, ",")+`]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Convert(obj, "v2"); err != nil {
			b.Fatal(err)
		}
	}
}
