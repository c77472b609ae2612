package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds of one YAML document: aliases may repeat a node, so the JSON they
// expand to is capped, and so is nesting.
const (
	maxYAMLValues = 1 << 20
	maxYAMLDepth  = 200
)

// isYAML tells a YAML document from a JSON one: by the file's extension,
// else by its first character (a JSON document here is an object).
func isYAML(file string, body []byte) bool {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	t := bytes.TrimSpace(body)
	return len(t) > 0 && t[0] != '{' && t[0] != '['
}

// yamlToJSON converts one YAML document to the JSON text with the same
// meaning, members in the order written. Numbers keep their digits: an
// integer is written in decimal from its exact value, a float as written
// (only YAML's spellings that JSON lacks are normalized), so nothing goes
// through float64. Errors name the line and column.
func yamlToJSON(src []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the YAML document is empty")
		}
		return nil, yamlSyntax(err, src)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlSyntax(err, src)
		}
		return nil, fmt.Errorf("line %d, column %d: a second YAML document (---); a file holds one", extra.Line, extra.Column)
	}
	c := &yamlConv{}
	if err := c.value(&doc, 0); err != nil {
		return nil, err
	}
	return c.out.Bytes(), nil
}

// yamlLine finds the line in the parser's messages ("yaml: line 3: …").
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlSyntax names the line and column of a parse error. The parser reports
// the line only; the column is then the line's first (column 1). An error
// at the end of the text is placed just after its last character.
func yamlSyntax(err error, src []byte) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		rest := strings.TrimPrefix(strings.Replace(msg, m[0], "", 1), ": ")
		return fmt.Errorf("line %s, column 1: %s", m[1], rest)
	}
	if strings.Contains(msg, "end of stream") {
		text := strings.TrimRight(string(src), "\n")
		line := strings.Count(text, "\n") + 1
		col := len([]rune(text[strings.LastIndex(text, "\n")+1:])) + 1
		return fmt.Errorf("line %d, column %d: %s", line, col, msg)
	}
	return errors.New(msg)
}

type yamlConv struct {
	out    bytes.Buffer
	values int
}

func at(n *yaml.Node, format string, a ...any) error {
	return fmt.Errorf("line %d, column %d: %s", n.Line, n.Column, fmt.Sprintf(format, a...))
}

func (c *yamlConv) value(n *yaml.Node, depth int) error {
	if c.values++; c.values > maxYAMLValues {
		return at(n, "the document expands to more than %d values (aliases?)", maxYAMLValues)
	}
	if depth > maxYAMLDepth {
		return at(n, "nested deeper than %d levels", maxYAMLDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return at(n, "the YAML document is empty")
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return at(n, "alias *%s names no anchor", n.Value)
		}
		return c.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		c.out.WriteByte('[')
		for i, it := range n.Content {
			if i > 0 {
				c.out.WriteByte(',')
			}
			if err := c.value(it, depth+1); err != nil {
				return err
			}
		}
		c.out.WriteByte(']')
		return nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return at(n, "unsupported YAML node")
}

func (c *yamlConv) mapping(n *yaml.Node, depth int) error {
	seen := map[string]*yaml.Node{}
	c.out.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		for k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return at(n.Content[i], "a key must be a plain value, not a list or a mapping")
		}
		if k.ShortTag() == "!!merge" {
			return at(k, "merge keys (<<) are not supported; write the members out")
		}
		if k.ShortTag() == "!!null" && k.Style == 0 && (k.Value == "" || k.Value == "~") {
			return at(k, "a key is missing")
		}
		if first, dup := seen[k.Value]; dup {
			return at(k, "%q repeats the key of line %d, column %d", k.Value, first.Line, first.Column)
		}
		seen[k.Value] = k
		if i > 0 {
			c.out.WriteByte(',')
		}
		writeJSONString(&c.out, k.Value)
		c.out.WriteByte(':')
		if err := c.value(v, depth+1); err != nil {
			return err
		}
	}
	c.out.WriteByte('}')
	return nil
}

func (c *yamlConv) scalar(n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary":
		writeJSONString(&c.out, n.Value)
	case "!!null":
		c.out.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return at(n, "%q is not a boolean", n.Value)
		}
		fmt.Fprint(&c.out, b)
	case "!!int":
		s, err := yamlInt(n.Value)
		if err != nil {
			return at(n, "%q is not an integer", n.Value)
		}
		c.out.WriteString(s)
	case "!!float":
		s, err := yamlFloat(n.Value)
		if err != nil {
			return at(n, "%s", err)
		}
		c.out.WriteString(s)
	default:
		return at(n, "the tag %s has no JSON meaning; remove it", n.Tag)
	}
	return nil
}

// yamlInt writes a YAML integer (decimal, 0x, 0o, 0b, legacy 0-octal,
// underscores) in decimal, from its exact value.
func yamlInt(v string) (string, error) {
	s := strings.ReplaceAll(v, "_", "")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"), strings.HasPrefix(s, "0X"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0o"), strings.HasPrefix(s, "0O"):
		base, s = 8, s[2:]
	case strings.HasPrefix(s, "0b"), strings.HasPrefix(s, "0B"):
		base, s = 2, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	var z big.Int
	if _, ok := z.SetString(s, base); !ok || s == "" {
		return "", fmt.Errorf("not an integer")
	}
	if neg {
		z.Neg(&z)
	}
	return z.String(), nil
}

// jsonNumber is JSON's number grammar.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// yamlFloat writes a YAML float as a JSON number with the same digits:
// as written when JSON allows it, else with YAML's extra spellings (+1.5,
// .5, 1., 007.5, 1_000.5) normalized. Infinity and NaN have no JSON form.
func yamlFloat(v string) (string, error) {
	if jsonNumber.MatchString(v) {
		return v, nil
	}
	s := strings.ReplaceAll(v, "_", "")
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case ".inf", ".nan":
		return "", fmt.Errorf("%s has no JSON form; write a number or a string", v)
	}
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign = "-"
	}
	s = strings.TrimLeft(s, "+-")
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i:]
	}
	whole, frac, dot := strings.Cut(mant, ".")
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	if dot && frac == "" {
		frac = "0"
	}
	out := sign + whole
	if dot {
		out += "." + frac
	}
	out += exp
	if !jsonNumber.MatchString(out) {
		return "", fmt.Errorf("%q is not a number JSON can hold", v)
	}
	return out, nil
}

// writeJSONString writes s as a JSON string; <, > and & stay as they are.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}
