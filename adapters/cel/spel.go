package cel

import (
	"strings"
)

// The engines reference writes conditions in SpEL (`#event.type == 'X'`);
// Yukta's are CEL. A condition that does not compile and reads like SpEL
// gets, in its compile error, the CEL form of the same condition, so every
// CEL field (node expressions, breakpoint conditions, rule if, deny and
// requireApproval if, the workflow engine's when) says it the same way.

// spelHint returns the sentence that shows the CEL form of src when src
// reads like SpEL, or "" when it does not. It rewrites what has a direct
// CEL form: #name and #root. (variables are plain names), and/or/not
// (&&, ||, !), x matches 're' (x.matches('re')); a T(...) type reference
// has none and is named.
func spelHint(src string) string {
	cel, spel, typeRef := fromSpEL(src)
	if !spel {
		return ""
	}
	var b strings.Builder
	b.WriteString("this is SpEL syntax, but conditions here are CEL: variables have no '#' (#root is the variables themselves), ")
	b.WriteString("&&, || and ! replace and, or and not, and x matches 're' is x.matches('re')")
	if typeRef {
		b.WriteString("; CEL has no T(...) type references: use its own functions, such as math.greatest(a, b) or int(x)")
	} else {
		b.WriteString("; write it as: ")
		b.WriteString(cel)
	}
	return b.String()
}

// fromSpEL rewrites the SpEL forms of src into CEL, outside string
// literals, and reports whether it found any (spel) and whether src holds a
// T(...) type reference, which has no CEL form.
func fromSpEL(src string) (out string, spel, typeRef bool) {
	var b strings.Builder
	prevWord := "" // the last word token, "" after any other token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			j := stringEnd(src, i)
			b.WriteString(src[i:j])
			i, prevWord = j, ""
		case c == '#' && i+1 < len(src) && identStart(src[i+1]):
			j := identEnd(src, i+1)
			name := src[i+1 : j]
			spel = true
			if name == "root" || name == "this" {
				// #root.x is x; #root alone is the variables.
				if j < len(src) && src[j] == '.' {
					j++
				}
				i, prevWord = j, ""
				continue
			}
			b.WriteString(name)
			i, prevWord = j, name
		case identStart(c):
			j := identEnd(src, i)
			word := src[i:j]
			afterDot := strings.HasSuffix(strings.TrimRight(b.String(), " \t\n"), ".")
			switch {
			case afterDot:
				b.WriteString(word)
			case word == "T" && j < len(src) && src[j] == '(':
				spel, typeRef = true, true
				b.WriteString(word)
			case word == "and" || word == "or":
				spel = true
				b.WriteString(map[string]string{"and": "&&", "or": "||"}[word])
			case word == "not" && j < len(src) && (src[j] == ' ' || src[j] == '('):
				spel = true
				b.WriteString("!")
				for j < len(src) && src[j] == ' ' {
					j++
				}
			case word == "matches" && prevWord != "":
				// x matches 're' → x.matches('re')
				k := j
				for k < len(src) && src[k] == ' ' {
					k++
				}
				if k < len(src) && (src[k] == '\'' || src[k] == '"') {
					end := stringEnd(src, k)
					trimmed := strings.TrimRight(b.String(), " \t\n")
					b.Reset()
					b.WriteString(trimmed)
					b.WriteString(".matches(" + src[k:end] + ")")
					spel = true
					i, prevWord = end, ""
					continue
				}
				b.WriteString(word)
			default:
				b.WriteString(word)
			}
			i, prevWord = j, word
		default:
			b.WriteByte(c)
			if c != ' ' && c != '\t' && c != '\n' && c != '.' {
				prevWord = ""
			}
			if c == ')' || c == ']' {
				prevWord = ")" // an operand ended: matches may follow
			}
			i++
		}
	}
	return b.String(), spel, typeRef
}

// stringEnd returns the index just past the string literal that starts at
// i (quote src[i], backslash escapes), or len(src) when it does not end.
func stringEnd(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return len(src)
}

func identStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

func identEnd(src string, i int) int {
	for i < len(src) && (identStart(src[i]) || (src[i] >= '0' && src[i] <= '9')) {
		i++
	}
	return i
}
