package syntax

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TokenKind classifies a token.
type TokenKind int

const (
	TokEOF     TokenKind = iota
	TokNewline           // end of a logical line
	TokIndent            // the next line is indented deeper
	TokDedent            // one indentation level closes
	TokName              // identifier that is not a keyword
	TokKeyword           // reserved word (def, if, and, None, True, ...)
	TokInt               // integer literal; Token.Int holds the value
	TokFloat             // float literal; Token.Float holds the value
	TokString            // string or bytes literal; Token.Str holds the decoded value
	TokOp                // operator or delimiter; Token.Text spells it
)

var tokenKindNames = [...]string{"end of file", "newline", "indent", "dedent", "name", "keyword", "int", "float", "string", "operator"}

func (k TokenKind) String() string {
	if k >= 0 && int(k) < len(tokenKindNames) {
		return tokenKindNames[k]
	}
	return fmt.Sprintf("TokenKind(%d)", int(k))
}

// Token is one scanned token with its exact extent.
type Token struct {
	Kind    TokenKind
	Text    string // source text (for Indent/Dedent/Newline/EOF: empty)
	Pos     Pos
	End     Pos
	Int     *big.Int // TokInt
	Float   float64  // TokFloat
	Str     string   // TokString: decoded value
	IsBytes bool     // TokString: a b"..." literal
}

func (t Token) describe() string {
	switch t.Kind {
	case TokName, TokKeyword, TokOp, TokInt, TokFloat:
		return strconv.Quote(t.Text)
	case TokString:
		return "string literal"
	}
	return t.Kind.String()
}

// keywords are Python 3's reserved words; none of them may be used as a name.
var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true,
	"del": true, "elif": true, "else": true, "except": true, "finally": true, "for": true,
	"from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// operators lists every operator and delimiter, longest first so the scanner matches greedily.
var operators = []string{
	"**=", "//=", ">>=", "<<=", "...",
	"->", ":=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=",
	"+", "-", "*", "/", "%", "@", "&", "|", "^", "~", "<", ">",
	"(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=",
}

// Scan tokenizes src. It always returns a complete token stream ending in EOF (erroneous
// characters are skipped), together with the errors found, as an ErrorList or nil.
func Scan(path string, src []byte) ([]Token, error) {
	s := newScanner(path, src)
	s.run()
	s.errs.Sort()
	return s.toks, s.errs.Err()
}

type scanner struct {
	path      string
	src       []byte
	off       int     // current byte offset
	line      int     // current line, 1-based
	lineStart int     // offset of the current line's first byte
	open      []Token // the open brackets (, [ and {, innermost last
	indents   []indentLevel
	atLineBeg bool
	toks      []Token
	errs      ErrorList
}

// indentLevel is one entry of the indentation stack, measured twice (tabs to multiples of 8
// and tabs as 1 column) so that tab/space mixes whose meaning depends on the tab size are
// detected as Python does.
// A phantom level was adopted after an "unindent does not match" error so that one bad line
// yields one error; it has no Indent token, so closing it emits no Dedent.
type indentLevel struct {
	wide, narrow int
	phantom      bool
}

func newScanner(path string, src []byte) *scanner {
	// Kernel source averages about one token per 4 bytes; sizing once avoids regrowth.
	return &scanner{path: path, src: src, line: 1, indents: []indentLevel{{}}, atLineBeg: true,
		toks: make([]Token, 0, len(src)/4+8)}
}

func (s *scanner) pos() Pos { return s.posAt(s.off) }

// posAt is the position of offset off, which must lie on the current line.
func (s *scanner) posAt(off int) Pos {
	return Pos{File: s.path, Line: s.line, Col: off - s.lineStart + 1}
}

func (s *scanner) errorf(pos Pos, format string, args ...any) {
	s.errs.Add(pos, fmt.Sprintf(format, args...))
}

func (s *scanner) emit(t Token) { s.toks = append(s.toks, t) }

func (s *scanner) peek(k int) byte {
	if s.off+k < len(s.src) {
		return s.src[s.off+k]
	}
	return 0
}

// newlineLen returns the length of the line break at off (\n, \r\n or \r), or 0.
func (s *scanner) newlineLen(off int) int {
	if off >= len(s.src) {
		return 0
	}
	switch s.src[off] {
	case '\n':
		return 1
	case '\r':
		if off+1 < len(s.src) && s.src[off+1] == '\n' {
			return 2
		}
		return 1
	}
	return 0
}

// nextLine advances past a line break of n bytes at the current offset.
func (s *scanner) nextLine(n int) {
	s.off += n
	s.line++
	s.lineStart = s.off
}

func (s *scanner) run() {
	for {
		if s.atLineBeg && len(s.open) == 0 {
			if !s.lineStartIndent() {
				break
			}
		}
		if s.off >= len(s.src) {
			break
		}
		c := s.src[s.off]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			s.off++
		case c == '#':
			s.skipComment()
		case c == '\n' || c == '\r':
			n := s.newlineLen(s.off)
			if len(s.open) == 0 {
				start := s.pos()
				s.emit(Token{Kind: TokNewline, Pos: start, End: Pos{File: s.path, Line: s.line, Col: start.Col + n}})
				s.atLineBeg = true
			}
			s.nextLine(n)
		case c == '\\':
			start := s.pos()
			if n := s.newlineLen(s.off + 1); n > 0 {
				s.off++
				s.nextLine(n)
				if s.off >= len(s.src) {
					s.errorf(start, "unexpected end of file after line continuation character")
				}
			} else {
				s.errorf(start, "unexpected character after line continuation character")
				s.off++
			}
		case c >= '0' && c <= '9' || c == '.' && isDigit(s.peek(1)):
			s.scanNumber()
		case c == '"' || c == '\'':
			s.scanString(s.off, "")
		case c < utf8.RuneSelf && (isLetter(c) || c == '_') || c >= utf8.RuneSelf:
			s.scanIdentOrPrefixedString()
		default:
			s.scanOperator()
		}
	}
	s.finish()
}

// lineStartIndent handles the indentation of a new logical line: blank and comment-only lines
// are skipped; otherwise Indent/Dedent tokens are emitted. It returns false at end of input.
func (s *scanner) lineStartIndent() bool {
	for {
		wide, narrow := 0, 0
		for s.off < len(s.src) {
			switch s.src[s.off] {
			case ' ':
				wide++
				narrow++
			case '\t':
				wide = (wide/8 + 1) * 8
				narrow++
			case '\f':
				wide, narrow = 0, 0
			default:
				goto measured
			}
			s.off++
		}
	measured:
		if s.off >= len(s.src) {
			return false
		}
		c := s.src[s.off]
		if c == '#' {
			s.skipComment()
			if s.off >= len(s.src) {
				return false
			}
		}
		if n := s.newlineLen(s.off); n > 0 {
			s.nextLine(n) // blank or comment-only line: no tokens
			continue
		}
		s.atLineBeg = false
		s.indent(indentLevel{wide: wide, narrow: narrow}, s.pos())
		return true
	}
}

func (s *scanner) indent(lv indentLevel, at Pos) {
	top := s.indents[len(s.indents)-1]
	switch {
	case lv.wide == top.wide:
		if lv.narrow != top.narrow {
			s.errorf(at, "inconsistent use of tabs and spaces in indentation")
		}
	case lv.wide > top.wide:
		if lv.narrow <= top.narrow {
			s.errorf(at, "inconsistent use of tabs and spaces in indentation")
		}
		s.indents = append(s.indents, lv)
		s.emit(Token{Kind: TokIndent, Pos: at, End: at})
	default:
		for len(s.indents) > 1 && lv.wide < s.indents[len(s.indents)-1].wide {
			s.popIndent(at)
		}
		top = s.indents[len(s.indents)-1]
		if lv.wide != top.wide {
			s.errorf(at, "unindent does not match any outer indentation level")
			lv.phantom = true
			s.indents = append(s.indents, lv)
		} else if lv.narrow != top.narrow {
			s.errorf(at, "inconsistent use of tabs and spaces in indentation")
		}
	}
}

func (s *scanner) popIndent(at Pos) {
	top := s.indents[len(s.indents)-1]
	s.indents = s.indents[:len(s.indents)-1]
	if !top.phantom {
		s.emit(Token{Kind: TokDedent, Pos: at, End: at})
	}
}

func (s *scanner) finish() {
	end := s.pos()
	if len(s.open) > 0 {
		// Name the innermost unclosed bracket, as Python does: that is where the fix goes.
		b := s.open[len(s.open)-1]
		s.errorf(b.Pos, "%q was never closed", b.Text)
	}
	if n := len(s.toks); n > 0 && s.toks[n-1].Kind != TokNewline && s.toks[n-1].Kind != TokDedent {
		s.emit(Token{Kind: TokNewline, Pos: end, End: end})
	}
	for len(s.indents) > 1 {
		s.popIndent(end)
	}
	s.emit(Token{Kind: TokEOF, Pos: end, End: end})
}

// skipComment skips to the end of the line, checking that the comment is valid UTF-8 as
// Python requires of the whole file.
func (s *scanner) skipComment() {
	start := s.off
	for s.off < len(s.src) && s.src[s.off] != '\n' && s.src[s.off] != '\r' {
		s.off++
	}
	if i := bytes.IndexByte(s.src[start:s.off], 0); i >= 0 {
		s.errorf(s.posAt(start+i), "NUL byte in source")
	}
	if text := s.src[start:s.off]; !utf8.Valid(text) {
		bad := start
		for bad < s.off {
			r, n := utf8.DecodeRune(s.src[bad:s.off])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			bad += n
		}
		s.errorf(s.posAt(bad), "invalid UTF-8 encoding in comment")
	}
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isIdentRune(r rune, first bool) bool {
	if r == '_' || unicode.IsLetter(r) {
		return true
	}
	return !first && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r))
}

func (s *scanner) scanIdentOrPrefixedString() {
	startOff := s.off
	start := s.pos()
	for s.off < len(s.src) {
		r, n := utf8.DecodeRune(s.src[s.off:])
		if r == utf8.RuneError && n <= 1 {
			if s.off == startOff {
				s.errorf(start, "invalid UTF-8 encoding")
				s.off++
				return
			}
			break
		}
		if !isIdentRune(r, s.off == startOff) {
			break
		}
		s.off += n
	}
	if s.off == startOff {
		r, n := utf8.DecodeRune(s.src[s.off:])
		s.errorf(start, "invalid character %q", r)
		s.off += n
		return
	}
	word := string(s.src[startOff:s.off])
	if c := s.peek(0); (c == '"' || c == '\'') && isStringPrefix(word) {
		s.scanString(startOff, strings.ToLower(word))
		return
	}
	kind := TokName
	if keywords[word] {
		kind = TokKeyword
	}
	s.emit(Token{Kind: kind, Text: word, Pos: start, End: s.pos()})
}

func isStringPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u", "b", "br", "rb", "f", "fr", "rf":
		return true
	}
	return false
}

// scanString scans a string literal whose prefix (lower-cased) starts at startOff and whose
// opening quote is at s.off.
func (s *scanner) scanString(startOff int, prefix string) {
	start := s.posAt(startOff)
	raw := strings.Contains(prefix, "r")
	isBytes := strings.Contains(prefix, "b")
	isF := strings.Contains(prefix, "f")
	q := s.src[s.off]
	triple := s.peek(1) == q && s.peek(2) == q
	qlen := 1
	if triple {
		qlen = 3
	}
	s.off += qlen
	var val strings.Builder
	closed := false
	for s.off < len(s.src) {
		c := s.src[s.off]
		if c == q && (!triple || s.peek(1) == q && s.peek(2) == q) {
			s.off += qlen
			closed = true
			break
		}
		if n := s.newlineLen(s.off); n > 0 {
			if !triple {
				break
			}
			val.WriteByte('\n')
			s.nextLine(n)
			continue
		}
		if c == '\\' {
			s.scanEscape(&val, raw, isBytes, q)
			continue
		}
		if c == 0 {
			s.errorf(s.pos(), "NUL byte in source")
		}
		if isBytes && c >= utf8.RuneSelf {
			s.errorf(s.pos(), "bytes literal may contain only ASCII characters")
		}
		val.WriteByte(c)
		s.off++
	}
	if !closed {
		kind := "string literal"
		if triple {
			kind = "triple-quoted string literal"
		}
		s.errs.Add(start, "unterminated "+kind)
	}
	if isF {
		s.errs.Add(start, "f-strings are not supported in kernels")
	}
	text := string(s.src[startOff:s.off])
	str := val.String()
	if !isBytes && !utf8.ValidString(str) {
		s.errs.Add(start, "string literal is not valid UTF-8")
	}
	s.emit(Token{Kind: TokString, Text: text, Pos: start, End: s.pos(), Str: str, IsBytes: isBytes})
}

var simpleEscapes = map[byte]byte{
	'\\': '\\', '\'': '\'', '"': '"', 'a': 7, 'b': 8, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11,
}

// scanEscape decodes the escape sequence at s.off (a backslash) into val, following Python:
// unknown escapes keep their backslash; in raw strings the backslash is kept but still protects
// the next character (quote or line break).
func (s *scanner) scanEscape(val *strings.Builder, raw, isBytes bool, q byte) {
	at := s.pos()
	s.off++ // the backslash
	if s.off >= len(s.src) {
		val.WriteByte('\\')
		return
	}
	if n := s.newlineLen(s.off); n > 0 {
		if raw {
			val.WriteByte('\\')
			val.WriteByte('\n')
		}
		s.nextLine(n)
		return
	}
	c := s.src[s.off]
	if raw {
		val.WriteByte('\\')
		val.WriteByte(c)
		s.off++
		return
	}
	if r, ok := simpleEscapes[c]; ok {
		val.WriteByte(r)
		s.off++
		return
	}
	switch {
	case c >= '0' && c <= '7':
		v := 0
		for i := 0; i < 3 && s.off < len(s.src) && s.src[s.off] >= '0' && s.src[s.off] <= '7'; i++ {
			v = v*8 + int(s.src[s.off]-'0')
			s.off++
		}
		if isBytes {
			val.WriteByte(byte(v))
		} else {
			val.WriteRune(rune(v))
		}
		return
	case c == 'x' || !isBytes && (c == 'u' || c == 'U'):
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		s.off++
		v := 0
		for i := 0; i < digits; i++ {
			h := s.peek(0)
			d, ok := hexDigit(h)
			if !ok || h == q {
				s.errorf(at, "truncated \\%c escape: want %d hex digits", c, digits)
				return
			}
			v = v*16 + d
			s.off++
		}
		if c == 'x' && isBytes {
			val.WriteByte(byte(v))
		} else if v > unicode.MaxRune || v >= 0xD800 && v < 0xE000 {
			s.errorf(at, "invalid unicode escape \\%c: U+%X is not a valid character", c, v)
		} else {
			val.WriteRune(rune(v))
		}
		return
	case c == 'N' && !isBytes:
		s.errorf(at, "named unicode escapes (\\N{...}) are not supported")
		s.off++
		return
	}
	val.WriteByte('\\') // unknown escape: kept verbatim, as in Python
}

func hexDigit(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// scanNumber scans an int or float literal, validating it with Python's rules (underscores
// only between digits, no leading zeros in decimal ints, no imaginary suffix).
func (s *scanner) scanNumber() {
	startOff := s.off
	start := s.pos()
	bad := func(format string, args ...any) {
		s.errorf(start, format, args...)
		// Skip the rest of the malformed literal.
		for s.off < len(s.src) && (isDigit(s.src[s.off]) || isLetter(s.src[s.off]) || s.src[s.off] == '_' || s.src[s.off] == '.') {
			s.off++
		}
		s.emit(Token{Kind: TokInt, Text: string(s.src[startOff:s.off]), Pos: start, End: s.pos(), Int: new(big.Int)})
	}
	// digits scans a run of digits accepted by ok with single underscores between them and
	// reports whether it was well formed and non-empty.
	digits := func(ok func(byte) bool, leadingUnderscore bool) bool {
		n := 0
		prevUnderscore := leadingUnderscore
		for s.off < len(s.src) {
			c := s.src[s.off]
			if c == '_' {
				if prevUnderscore {
					return false
				}
				prevUnderscore = true
			} else if ok(c) {
				prevUnderscore = false
				n++
			} else {
				break
			}
			s.off++
		}
		return n > 0 && !prevUnderscore
	}
	tail := func() bool {
		c := s.peek(0)
		if c == 'j' || c == 'J' {
			s.errorf(start, "imaginary literals are not supported")
			s.off++
			return false
		}
		if c == '_' || isLetter(c) || isDigit(c) || c >= utf8.RuneSelf {
			bad("invalid numeric literal %q", string(s.src[startOff:s.off+1]))
			return false
		}
		return true
	}
	if s.src[s.off] == '0' && s.off+1 < len(s.src) {
		base := 0
		var ok func(byte) bool
		switch s.src[s.off+1] {
		case 'x', 'X':
			base, ok = 16, func(c byte) bool { _, h := hexDigit(c); return h }
		case 'o', 'O':
			base, ok = 8, func(c byte) bool { return c >= '0' && c <= '7' }
		case 'b', 'B':
			base, ok = 2, func(c byte) bool { return c == '0' || c == '1' }
		}
		if base != 0 {
			s.off += 2
			if s.peek(0) == '_' {
				s.off++
			}
			if !digits(ok, false) {
				bad("invalid %s literal", map[int]string{16: "hexadecimal", 8: "octal", 2: "binary"}[base])
				return
			}
			if !tail() {
				return
			}
			text := string(s.src[startOff:s.off])
			v, _ := new(big.Int).SetString(strings.ReplaceAll(text[2:], "_", ""), base)
			s.emit(Token{Kind: TokInt, Text: text, Pos: start, End: s.pos(), Int: v})
			return
		}
	}
	isFloat := false
	if s.src[s.off] != '.' {
		if !digits(isDigit, false) {
			bad("invalid decimal literal")
			return
		}
	}
	if s.peek(0) == '.' {
		isFloat = true
		s.off++
		if isDigit(s.peek(0)) && !digits(isDigit, false) {
			bad("invalid decimal literal")
			return
		}
	}
	if c := s.peek(0); c == 'e' || c == 'E' {
		save := s.off
		s.off++
		if c := s.peek(0); c == '+' || c == '-' {
			s.off++
		}
		if !isDigit(s.peek(0)) {
			s.off = save
			bad("invalid float literal: exponent has no digits")
			return
		}
		if !digits(isDigit, false) {
			bad("invalid float literal")
			return
		}
		isFloat = true
	}
	if !tail() {
		return
	}
	text := string(s.src[startOff:s.off])
	clean := strings.ReplaceAll(text, "_", "")
	if isFloat {
		f, err := strconv.ParseFloat(clean, 64)
		if err != nil && !isRangeErr(err) {
			s.errorf(start, "invalid float literal %q", text)
		}
		s.emit(Token{Kind: TokFloat, Text: text, Pos: start, End: s.pos(), Float: f})
		return
	}
	if len(clean) > 1 && clean[0] == '0' && strings.Trim(clean, "0") != "" {
		s.errorf(start, "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers")
	}
	v, _ := new(big.Int).SetString(clean, 10)
	s.emit(Token{Kind: TokInt, Text: text, Pos: start, End: s.pos(), Int: v})
}

// isRangeErr reports a float literal too large for float64; Python makes it inf, as does
// ParseFloat, so it is not an error.
func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (s *scanner) scanOperator() {
	start := s.pos()
	rest := s.src[s.off:]
	for _, op := range operators {
		if op[0] == rest[0] && len(rest) >= len(op) && string(rest[:len(op)]) == op {
			s.off += len(op)
			tok := Token{Kind: TokOp, Text: op, Pos: start, End: s.pos()}
			switch op {
			case "(", "[", "{":
				s.open = append(s.open, tok)
			case ")", "]", "}":
				// A mismatched closer is the parser's to report; it still closes a level
				// so that one typo does not swallow the rest of the file.
				if len(s.open) > 0 {
					s.open = s.open[:len(s.open)-1]
				}
			}
			s.emit(tok)
			return
		}
	}
	r, n := utf8.DecodeRune(rest)
	switch {
	case r == utf8.RuneError && n <= 1:
		s.errorf(start, "invalid UTF-8 encoding")
	case r == '!':
		s.errorf(start, "invalid character '!' (use 'not' or '!=')")
	default:
		s.errorf(start, "invalid character %q", r)
	}
	s.off += n
}
