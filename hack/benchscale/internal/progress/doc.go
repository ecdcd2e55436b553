// Package progress is what benchscale says as it goes: one line per
// step on standard error, "[bench] …", apart from the tables it prints on
// standard output.
package progress
