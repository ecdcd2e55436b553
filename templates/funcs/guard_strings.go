package funcs

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/templates/measure"
)

// This file holds the functions that build strings: each computes the
// size of its result (saturating, so no product can wrap around) and
// checks it against the render's budget before it allocates. It stays: an
// exponential string is an error at the line of the call, the same on
// every run, not a kill at the worker's memory ceiling; printf refuses %p
// (an address, different on every render).

// printSize bounds the size of v printed by fmt (%v), refusing a value
// that prints a memory address.
func (g *Guard) printSize(fn string, v any) (int64, error) {
	if s, ok := v.(string); ok {
		return int64(len(s)), nil
	}
	m := measure.New(fn, g.remaining())
	s, err := m.Measure(v)
	if err != nil {
		return 0, err
	}
	if m.Addr {
		return 0, funcError(fn, "a %T holds a pointer, func or channel, which prints as a memory address that differs on every render", v)
	}
	return s.Bytes, nil
}

// printArgs bounds the size of args printed by fmt, one after the other.
func (g *Guard) printArgs(fn string, args []any) (int64, error) {
	n := int64(len(args))
	for _, a := range args {
		size, err := g.printSize(fn, a)
		if err != nil {
			return 0, err
		}
		n = measure.AddSat(n, size)
	}
	return n, nil
}

// printer wraps the functions that print their arguments with fmt: print,
// println, cat, quote, squote, toString, html, js, urlquery. grow bounds
// how much larger than its input the result can be (quoting escapes).
func (g *Guard) printer(fn string, grow int64, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		n, err := g.printArgs(fn, args)
		if err != nil {
			return "", err
		}
		if err := g.room(fn, measure.MulSat(n, grow)); err != nil {
			return "", err
		}
		out := f(args...)
		return out, g.take(fn, int64(len(out)))
	}
}

// printf is fmt.Sprintf, with the result bounded before it is made (see
// printfSize) and %p refused (an address differs on every render).
func (g *Guard) printf(format string, args ...any) (string, error) {
	sizes := make([]measure.Shape, len(args))
	for i, a := range args {
		if s, ok := a.(string); ok {
			sizes[i] = measure.Leaf(measure.StringBytes(s))
			continue
		}
		m := measure.New("printf", g.remaining())
		s, err := m.Measure(a)
		if err != nil {
			return "", err
		}
		if m.Addr {
			return "", funcError("printf", "argument %d, a %T, holds a pointer, func or channel, which prints as a memory address that differs on every render", i+1, a)
		}
		sizes[i] = s
	}
	n, err := printfSize(format, args, sizes)
	if err != nil {
		return "", err
	}
	if err := g.room("printf", n); err != nil {
		return "", err
	}
	out := fmt.Sprintf(format, args...)
	return out, g.take("printf", int64(len(out)))
}

// fmtMaxWidth is fmt's largest width or precision; a larger one prints as
// %!(BADWIDTH) or %!(BADPREC).
const fmtMaxWidth = 1e6

// printfSize bounds fmt.Sprintf(format, args...): the format's own bytes;
// for each verb, its argument's size (times 4 for the verbs that escape or
// write hex) plus its width and precision applied to every scalar and key
// of the argument (fmt pads each element of a list or map); and every
// argument once more, for fmt's %!(EXTRA ...) and its error forms.
func printfSize(format string, args []any, sizes []measure.Shape) (int64, error) {
	n := int64(len(format))
	for _, s := range sizes {
		n = measure.AddSat(n, s.Bytes, 32)
	}
	argNum := 0
	for i := 0; i < len(format); {
		if format[i] != '%' {
			i++
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		var width, prec int64
		i, argNum = argIndex(format, i, argNum)
		i, argNum, width = widthOrPrec(format, i, argNum, args)
		if i < len(format) && format[i] == '.' {
			i++
			i, argNum = argIndex(format, i, argNum)
			i, argNum, prec = widthOrPrec(format, i, argNum, args)
		}
		i, argNum = argIndex(format, i, argNum)
		if i >= len(format) {
			break
		}
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size
		switch verb {
		case '%':
			continue
		case 'p':
			return 0, funcError("printf", "the verb %%p prints a memory address, which differs on every render")
		}
		s := measure.Leaf(32)
		if argNum < len(sizes) {
			s = sizes[argNum]
		}
		argNum++
		grow := int64(1)
		if strings.ContainsRune("qxXU", verb) {
			grow = 4
		}
		n = measure.AddSat(n, measure.MulSat(s.Bytes, grow), measure.MulSat(width+prec, max(s.Items, 1)))
	}
	return n, nil
}

// argIndex reads an explicit argument index, [n].
func argIndex(format string, i, argNum int) (int, int) {
	if i >= len(format) || format[i] != '[' {
		return i, argNum
	}
	j := strings.IndexByte(format[i:], ']')
	if j < 0 {
		return i, argNum
	}
	var k int
	if _, err := fmt.Sscanf(format[i+1:i+j], "%d", &k); err == nil && k >= 1 {
		argNum = k - 1
	}
	return i + j + 1, argNum
}

// widthOrPrec reads a width or precision: digits, or * taking an argument.
func widthOrPrec(format string, i, argNum int, args []any) (int, int, int64) {
	if i < len(format) && format[i] == '*' {
		w := int64(fmtMaxWidth)
		if argNum < len(args) {
			if k, ok := args[argNum].(int); ok && k <= fmtMaxWidth && k >= -fmtMaxWidth {
				w = int64(max(k, -k))
			}
		}
		return i + 1, argNum + 1, w
	}
	var w int64
	for i < len(format) && format[i] >= '0' && format[i] <= '9' {
		w = min(w*10+int64(format[i]-'0'), fmtMaxWidth)
		i++
	}
	return i, argNum, w
}

// repeat is sprig's repeat: count copies of s.
func (g *Guard) repeat(count int, s string) (string, error) {
	if count < 0 {
		return "", funcError("repeat", "the count must not be negative, got %d", count)
	}
	if err := g.take("repeat", measure.MulSat(int64(count), int64(len(s)))); err != nil {
		return "", err
	}
	return strings.Repeat(s, count), nil
}

// indent is sprig's indent (and nindent, with newline): every line of s
// gets spaces spaces.
func (g *Guard) indent(fn, newline string) func(int, string) (string, error) {
	return func(spaces int, s string) (string, error) {
		if spaces < 0 {
			return "", funcError(fn, "the number of spaces must not be negative, got %d", spaces)
		}
		lines := int64(strings.Count(s, "\n")) + 1
		if err := g.take(fn, measure.AddSat(int64(len(s)+len(newline)), measure.MulSat(lines, int64(spaces)))); err != nil {
			return "", err
		}
		pad := strings.Repeat(" ", spaces)
		return newline + pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
	}
}

// wrapSize bounds wrap and wrapWith: a separator at most every width bytes.
func (g *Guard) wrapSize(fn string, width int, sep, s string) error {
	if width < 0 {
		return funcError(fn, "the width must not be negative, got %d", width)
	}
	breaks := int64(len(s))/int64(max(width, 1)) + 1
	return g.take(fn, measure.AddSat(int64(len(s)), measure.MulSat(breaks, int64(max(len(sep), 1)))))
}

// replace is sprig's replace: every old in s becomes new.
func (g *Guard) replace(old, new, s string) (string, error) {
	count := int64(strings.Count(s, old))
	if err := g.take("replace", measure.AddSat(int64(len(s)), measure.MulSat(count, int64(len(new))))); err != nil {
		return "", err
	}
	return strings.ReplaceAll(s, old, new), nil
}

// substr is sprig's substr with its indexes checked (sprig panics on some).
func (g *Guard) substr(start, end int, s string) (string, error) {
	switch {
	case start < 0 && (end < 0 || end > len(s)):
		return "", funcError("substr", "the end %d is outside a string of %d bytes", end, len(s))
	case start < 0:
		return s[:end], nil
	case start > len(s) || end >= 0 && end <= len(s) && end < start:
		return "", funcError("substr", "the start %d is outside a string of %d bytes or after the end %d", start, len(s), end)
	case end < 0 || end > len(s):
		return s[start:], nil
	}
	return s[start:end], nil
}

// encoder wraps b64enc and b32enc: the result's size is known before.
func (g *Guard) encoder(fn string, enc interface {
	EncodedLen(int) int
	EncodeToString([]byte) string
}) func(string) (string, error) {
	return func(s string) (string, error) {
		if err := g.take(fn, int64(enc.EncodedLen(len(s)))); err != nil {
			return "", err
		}
		return enc.EncodeToString([]byte(s)), nil
	}
}

// toStrings wraps toStrings and sortAlpha: every element prints with fmt.
// sortAlpha sorts a copy (sprig sorts a []string argument in place).
func (g *Guard) toStrings(fn string, f func(any) []string) func(any) ([]string, error) {
	return func(v any) ([]string, error) {
		size, err := g.printSize(fn, v)
		if err != nil {
			return nil, err
		}
		if err := g.room(fn, size); err != nil {
			return nil, err
		}
		if s, ok := v.([]string); ok {
			v = append([]string(nil), s...)
		}
		out := f(v)
		var n int64
		for _, s := range out {
			n = measure.AddSat(n, int64(len(s)), elementBytes)
		}
		return out, g.take(fn, n)
	}
}

// join is sprig's join: the elements print with fmt, sep between them.
func (g *Guard) join(join func(string, any) string) func(string, any) (string, error) {
	return func(sep string, v any) (string, error) {
		size, err := g.printSize("join", v)
		if err != nil {
			return "", err
		}
		n := int64(1)
		if l, err := listLen("join", v); err == nil {
			n = int64(l)
		}
		if err := g.room("join", measure.AddSat(size, measure.MulSat(n, int64(len(sep))))); err != nil {
			return "", err
		}
		out := join(sep, v)
		return out, g.take("join", int64(len(out)))
	}
}

// splitCount charges splitList, split and splitn before they split: one
// element per separator found, at most n when n is not negative.
func (g *Guard) splitCount(fn, sep, s string, n int) error {
	count := int64(strings.Count(s, sep)) + 1
	if n >= 0 {
		count = min(count, int64(n))
	}
	return g.take(fn, measure.MulSat(count, 2*elementBytes))
}

// compileRegexp compiles a template's regular expression with an error
// that does not quote it (it may be a tenant's value).
func compileRegexp(fn, expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		code := "invalid"
		var se *syntax.Error
		if errors.As(err, &se) {
			code = string(se.Code)
		}
		return nil, funcError(fn, "the regular expression does not compile: %s", code)
	}
	return re, nil
}

// matches counts the matches of re in s and their total length, with an
// allocation no larger than s.
func matches(re *regexp.Regexp, s string) (count, total int64) {
	re.ReplaceAllStringFunc(s, func(m string) string {
		count++
		total += int64(len(m))
		return ""
	})
	return count, total
}

// regexReplace wraps regexReplaceAll (expand true: $1 in repl is a group)
// and regexReplaceAllLiteral, and their must forms. The result is bounded
// by s with every match replaced by repl, each $ reference in repl
// growing by at most the match.
func (g *Guard) regexReplace(fn string, expand bool) func(string, string, string) (string, error) {
	return func(expr, s, repl string) (string, error) {
		re, err := compileRegexp(fn, expr)
		if err != nil {
			return "", err
		}
		refs := int64(0)
		if expand {
			refs = int64(strings.Count(repl, "$"))
		}
		worst := measure.AddSat(int64(len(s)), measure.MulSat(int64(len(s))+1, measure.AddSat(int64(len(repl)), measure.MulSat(refs, int64(len(s))))))
		if worst > g.remaining() {
			count, total := matches(re, s)
			worst = measure.AddSat(int64(len(s)), measure.MulSat(count, int64(len(repl))), measure.MulSat(refs, total))
		}
		if err := g.room(fn, worst); err != nil {
			return "", err
		}
		var out string
		if expand {
			out = re.ReplaceAllString(s, repl)
		} else {
			out = re.ReplaceAllLiteralString(s, repl)
		}
		return out, g.take(fn, int64(len(out)))
	}
}

// regexList wraps regexFindAll and regexSplit, and their must forms: the
// list has at most n elements, or one per match.
func (g *Guard) regexList(fn string, split bool) func(string, string, int) ([]string, error) {
	return func(expr, s string, n int) ([]string, error) {
		re, err := compileRegexp(fn, expr)
		if err != nil {
			return nil, err
		}
		count := int64(len(s)) + 2
		if n >= 0 {
			count = min(count, int64(n))
		}
		if measure.MulSat(count, elementBytes) > g.remaining() {
			count, _ = matches(re, s)
			count += 2
		}
		if err := g.take(fn, measure.MulSat(count, elementBytes)); err != nil {
			return nil, err
		}
		if split {
			return re.Split(s, n), nil
		}
		return re.FindAllString(s, n), nil
	}
}

// regexFind wraps regexFind and mustRegexFind (mustRegexMatch too, with
// a bool result): their results are no larger than s, but their errors
// would quote the expression.
func regexFind(fn string) func(string, string) (string, error) {
	return func(expr, s string) (string, error) {
		re, err := compileRegexp(fn, expr)
		if err != nil {
			return "", err
		}
		return re.FindString(s), nil
	}
}

func mustRegexMatch(expr, s string) (bool, error) {
	re, err := compileRegexp("mustRegexMatch", expr)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}
