package dates_test

import (
	"fmt"
	"os"
	"text/template"

	"github.com/stencil-dev/stencil/templates/dates"
)

// The date functions format times in UTC, and refuse what sprig would
// take as the current time.
func ExampleFuncs() {
	t := template.Must(template.New("t").Funcs(dates.Funcs(false)).Parse(`{{ date "2006-01-02 15:04 MST" 86400 }}`))
	_ = t.Execute(os.Stdout, nil)
	fmt.Println()
	t = template.Must(template.New("t").Funcs(dates.Funcs(false)).Parse(`{{ date "2006-01-02" "x" }}`))
	fmt.Println(t.Execute(os.Stdout, nil) != nil)
	// Output:
	// 1970-01-02 00:00 UTC
	// true
}

// The duration helpers read durations and numbers of seconds.
func ExampleDurationFuncs() {
	t := template.Must(template.New("t").Funcs(dates.DurationFuncs()).Parse(`{{ durationSeconds "1m30s" }} {{ durationMinutes 90 }} {{ durationSeconds "x" }}`))
	_ = t.Execute(os.Stdout, nil)
	fmt.Println()
	// Output: 90 1.5 0
}
