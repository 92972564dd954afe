// Package shellquote renders argument vectors as text that a POSIX shell reads back as the same
// arguments: what logs and benchmark results print as "the command".
package shellquote

import "strings"

// Join quotes each argument that needs it and joins them with spaces. A quoted argument is put in
// single quotes, each single quote inside it closing the quotes, escaped with a backslash, and
// reopening them. Arguments made only of letters, digits and -_./=,:% stay as they are.
func Join(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, needsQuote) < 0 {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

func needsQuote(c rune) bool {
	return !(c == '-' || c == '_' || c == '.' || c == '/' || c == '=' || c == ',' || c == ':' || c == '%' ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
}
