package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jkind is the kind of a parsed JSON value.
type jkind int

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "a list", "an object"}[k]
}

// jvalue is a JSON value that remembers where it starts in the file, so every problem can be
// reported with line:col as well as its JSON path.
type jvalue struct {
	kind jkind
	off  int
	b    bool
	num  json.Number
	str  string
	arr  []*jvalue
	keys []string // object keys in file order
	obj  map[string]*jvalue
}

// parseJSON parses data into a position-tracking tree. Duplicate object keys are an error
// (encoding/json would silently keep the last).
func parseJSON(data []byte) (*jvalue, error) {
	p := &jparser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.start()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, &syntaxError{off, "unexpected data after the top-level value"}
	}
	return v, nil
}

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

type jparser struct {
	data []byte
	dec  *json.Decoder
}

// start is the offset of the next token: the decoder's offset after skipping whitespace and
// the separators the decoder consumes silently.
func (p *jparser) start() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jparser) token() (json.Token, int, error) {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, int(se.Offset), &syntaxError{int(se.Offset), se.Error()}
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, len(p.data), &syntaxError{len(p.data), "unexpected end of JSON input"}
		}
		return nil, off, &syntaxError{off, err.Error()}
	}
	return tok, off, nil
}

// MaxNesting bounds how deeply lists and objects nest in a graph file: real graphs nest a
// few levels, and the parser recurses once per level.
const MaxNesting = 128

// value parses the value that starts at the next token, nested depth lists or objects deep.
func (p *jparser) value(depth int) (*jvalue, error) {
	tok, off, err := p.token()
	if err != nil {
		return nil, err
	}
	v := &jvalue{off: off}
	if d, ok := tok.(json.Delim); ok && (d == '[' || d == '{') && depth >= MaxNesting {
		return nil, &syntaxError{off, fmt.Sprintf("lists and objects nested more than %d deep", MaxNesting)}
	}
	switch t := tok.(type) {
	case nil:
		v.kind = jNull
	case bool:
		v.kind, v.b = jBool, t
	case json.Number:
		v.kind, v.num = jNumber, t
	case string:
		v.kind, v.str = jString, t
	case json.Delim:
		switch t {
		case '[':
			v.kind = jArray
			for p.dec.More() {
				e, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			if _, _, err := p.token(); err != nil {
				return nil, err
			}
		case '{':
			v.kind, v.obj = jObject, map[string]*jvalue{}
			for p.dec.More() {
				ktok, koff, err := p.token()
				if err != nil {
					return nil, err
				}
				key, _ := ktok.(string)
				if _, dup := v.obj[key]; dup {
					return nil, &syntaxError{koff, fmt.Sprintf("duplicate key %q", key)}
				}
				e, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, key)
				v.obj[key] = e
			}
			if _, _, err := p.token(); err != nil {
				return nil, err
			}
		default:
			return nil, &syntaxError{off, fmt.Sprintf("unexpected %q", t)}
		}
	}
	return v, nil
}

// lineCol turns a byte offset into a 1-based line and column (in bytes).
func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// describe names a JSON value's kind for messages ("a string", "the number 3").
func describe(v *jvalue) string {
	switch v.kind {
	case jNumber:
		return "the number " + v.num.String()
	case jString:
		s := v.str
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return fmt.Sprintf("the string %q", s)
	case jBool:
		return fmt.Sprintf("%v", v.b)
	}
	return v.kind.String()
}

// Problem is one thing wrong with a graph.
type Problem struct {
	File string // the graph file
	Path string // JSON path, e.g. nodes[3].inputs[1]; empty for the file as a whole
	Line int    // 1-based; 0 when unknown
	Col  int
	Node string // name of the node concerned, if any
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		if p.Node != "" {
			fmt.Fprintf(&b, " (node %q)", p.Node)
		}
		b.WriteString(": ")
	} else if p.Node != "" {
		fmt.Fprintf(&b, "node %q: ", p.Node)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found while loading a graph.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	shown := e.Problems[:min(len(e.Problems), MaxProblemsShown)]
	lines := make([]string, len(shown), len(shown)+1)
	for i, p := range shown {
		lines[i] = p.String()
	}
	if more := len(e.Problems) - len(shown); more > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more problems (the first %d are shown)", more, len(shown)))
	}
	return strings.Join(lines, "\n")
}

// MaxProblemsShown bounds the problems an Error prints: a hostile file can hold millions.
const MaxProblemsShown = 50
