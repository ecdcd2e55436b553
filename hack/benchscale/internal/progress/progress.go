package progress

import (
	"fmt"
	"os"
)

// Logf writes one line of progress to standard error. It reads os.Stderr
// at each call, so a test can capture what a step says.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench] "+format+"\n", args...)
}
