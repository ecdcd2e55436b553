package exit

import (
	"errors"
	"fmt"
)

// Error carries a process exit code other than 1 (stencil diff exits 1
// when there are differences and 2 on errors, as kubectl diff does).
type Error struct {
	// Code is the process exit code.
	Code int
	// Err is the error to print, if any.
	Err error
}

// Error is Err's message, or the exit status when there is no Err.
func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Code returns the exit code for an error a command returned: 0 for
// none, an Error's Code, else 1.
func Code(err error) int {
	var exit *Error
	if errors.As(err, &exit) {
		return exit.Code
	}
	if err != nil {
		return 1
	}
	return 0
}
