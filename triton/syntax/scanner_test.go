package syntax

import (
	"fmt"
	"strings"
	"testing"
)

// tokString renders a token stream compactly: kind or text, with line:col.
func tokString(toks []Token) string {
	var parts []string
	for _, t := range toks {
		var s string
		switch t.Kind {
		case TokNewline:
			s = "NL"
		case TokIndent:
			s = "IN"
		case TokDedent:
			s = "DE"
		case TokEOF:
			s = "EOF"
		default:
			s = t.Text
		}
		parts = append(parts, fmt.Sprintf("%s@%d:%d", s, t.Pos.Line, t.Pos.Col))
	}
	return strings.Join(parts, " ")
}

func TestScanLayout(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"simple", "x = 1\n", "x@1:1 =@1:3 1@1:5 NL@1:6 EOF@2:1"},
		{"no final newline", "x", "x@1:1 NL@1:2 EOF@1:2"},
		{"empty", "", "EOF@1:1"},
		{"only comments and blanks", "# c\n\n   \n  # d\n", "EOF@5:1"},
		{"indent dedent",
			"if a:\n    b\n    c\nd\n",
			"if@1:1 a@1:4 :@1:5 NL@1:6 IN@2:5 b@2:5 NL@2:6 c@3:5 NL@3:6 DE@4:1 d@4:1 NL@4:2 EOF@5:1"},
		{"two dedents at eof",
			"if a:\n  if b:\n    c",
			"if@1:1 a@1:4 :@1:5 NL@1:6 IN@2:3 if@2:3 b@2:6 :@2:7 NL@2:8 IN@3:5 c@3:5 NL@3:6 DE@3:6 DE@3:6 EOF@3:6"},
		{"blank and comment lines do not dedent",
			"if a:\n    b\n\n# x\n    c\n",
			"if@1:1 a@1:4 :@1:5 NL@1:6 IN@2:5 b@2:5 NL@2:6 c@5:5 NL@5:6 DE@6:1 EOF@6:1"},
		{"implicit joining",
			"f(a,\n  b)\n[1,\n2]\n",
			"f@1:1 (@1:2 a@1:3 ,@1:4 b@2:3 )@2:4 NL@2:5 [@3:1 1@3:2 ,@3:3 2@4:1 ]@4:2 NL@4:3 EOF@5:1"},
		{"explicit continuation", "x = a + \\\n    b\n", "x@1:1 =@1:3 a@1:5 +@1:7 b@2:5 NL@2:6 EOF@3:1"},
		{"comment after code", "x  # hi\ny\n", "x@1:1 NL@1:8 y@2:1 NL@2:2 EOF@3:1"},
		{"crlf", "x\r\n  \r\ny\r\n", "x@1:1 NL@1:2 y@3:1 NL@3:2 EOF@4:1"},
		{"tabs", "if a:\n\tb\n", "if@1:1 a@1:4 :@1:5 NL@1:6 IN@2:2 b@2:2 NL@2:3 DE@3:1 EOF@3:1"},
		{"operators longest match",
			"a**=b//=c>>=d<<=e->f:=g...h!=i@=j",
			"a@1:1 **=@1:2 b@1:5 //=@1:6 c@1:9 >>=@1:10 d@1:13 <<=@1:14 e@1:17 ->@1:18 f@1:20 :=@1:21 g@1:23 ...@1:24 h@1:27 !=@1:28 i@1:30 @=@1:31 j@1:33 NL@1:34 EOF@1:34"},
		{"keywords and names", "not None is_ None_", "not@1:1 None@1:5 is_@1:10 None_@1:14 NL@1:19 EOF@1:19"},
		{"multibyte columns are bytes", "é = 'ü'; z", "é@1:1 =@1:4 'ü'@1:6 ;@1:10 z@1:12 NL@1:13 EOF@1:13"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, err := Scan("t.py", []byte(tt.src))
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if got := tokString(toks); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestScanKeywordKind(t *testing.T) {
	toks, err := Scan("t.py", []byte("def x True"))
	if err != nil {
		t.Fatal(err)
	}
	want := []TokenKind{TokKeyword, TokName, TokKeyword, TokNewline, TokEOF}
	for i, k := range want {
		if toks[i].Kind != k {
			t.Errorf("token %d (%q): kind %v, want %v", i, toks[i].Text, toks[i].Kind, k)
		}
	}
}

func TestScanNumbers(t *testing.T) {
	ints := map[string]string{
		"0": "0", "00": "0", "7": "7", "1_000": "1000", "0xff": "255", "0XFF_FF": "65535",
		"0x_a": "10", "0o17": "15", "0O_7": "7", "0b1010": "10", "0b_1_0": "2",
		"123456789012345678901234567890": "123456789012345678901234567890",
	}
	for src, want := range ints {
		toks, err := Scan("t.py", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if toks[0].Kind != TokInt || toks[0].Int.String() != want || toks[0].Text != src {
			t.Errorf("%s: got kind %v value %v text %q, want int %s", src, toks[0].Kind, toks[0].Int, toks[0].Text, want)
		}
	}
	floats := map[string]float64{
		"1.": 1, ".5": 0.5, "1.5": 1.5, "1e10": 1e10, "1E-3": 1e-3, "2.5e+2": 250,
		"3.14_15": 3.1415, "1_0.0_1e1_0": 10.01e10, "0.0": 0, "1e400": inf(), "00.5": 0.5, "0e0": 0,
	}
	for src, want := range floats {
		toks, err := Scan("t.py", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if toks[0].Kind != TokFloat || toks[0].Float != want || toks[0].End.Col != len(src)+1 {
			t.Errorf("%s: got kind %v value %v end %v, want float %v", src, toks[0].Kind, toks[0].Float, toks[0].End, want)
		}
	}
	// `1 .real` and `1..real` stay distinct from floats; `x.5` is not a float after a name.
	toks, _ := Scan("t.py", []byte("1..real"))
	if toks[0].Kind != TokFloat || toks[0].Text != "1." || toks[1].Text != "." || toks[2].Text != "real" {
		t.Errorf("1..real scanned as %s", tokString(toks))
	}
}

func inf() float64 { var z float64; return 1 / z }

func TestScanStrings(t *testing.T) {
	tests := []struct {
		src, want string
		bytes     bool
	}{
		{`'a'`, "a", false},
		{`"a'b"`, "a'b", false},
		{`'it\'s'`, "it's", false},
		{`'\n\t\\\x41\101\u00e9\U0001F600'`, "\n\t\\AA\u00e9\U0001F600", false},
		{`'\q'`, `\q`, false},
		{`r'\n\''`, `\n\'`, false},
		{`R"\d+"`, `\d+`, false},
		{"'''a\nb'''", "a\nb", false},
		{`"""x "y" z"""`, `x "y" z`, false},
		{"'a\\\nb'", "ab", false},
		{`b'\x00\xff'`, "\x00\xff", true},
		{`rb'\x'`, `\x`, true},
		{`Br"\\"`, `\\`, true},
		{`u'x'`, "x", false},
		{`''`, "", false},
	}
	for _, tt := range tests {
		toks, err := Scan("t.py", []byte(tt.src))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		tk := toks[0]
		if tk.Kind != TokString || tk.Str != tt.want || tk.IsBytes != tt.bytes || tk.Text != tt.src {
			t.Errorf("%s: got %v %q bytes=%v text %q, want %q bytes=%v", tt.src, tk.Kind, tk.Str, tk.IsBytes, tk.Text, tt.want, tt.bytes)
		}
	}
	// A triple-quoted string spanning lines ends on its last line.
	toks, _ := Scan("t.py", []byte("x = '''a\nbc''' + y"))
	if s := toks[2]; s.Pos != (Pos{"t.py", 1, 5}) || s.End != (Pos{"t.py", 2, 6}) || toks[3].Pos != (Pos{"t.py", 2, 7}) {
		t.Errorf("multi-line string spans %v-%v, next token at %v", s.Pos, s.End, toks[3].Pos)
	}
}

func TestScanErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"if a:\n        b\n\tc\n", "t.py:3:2: inconsistent use of tabs and spaces in indentation"},
		{"if a:\n\tb\n        c\n", "t.py:3:9: inconsistent use of tabs and spaces in indentation"},
		{"if a:\n    b\n  c\n", "t.py:3:3: unindent does not match any outer indentation level"},
		{"x = 'abc\n", "t.py:1:5: unterminated string literal"},
		{"x = '''abc\n\n", "t.py:1:5: unterminated triple-quoted string literal"},
		{"f'{x}'", "t.py:1:1: f-strings are not supported in kernels"},
		{"x = RF'a'", "t.py:1:5: f-strings are not supported in kernels"},
		{"x = 1j", "t.py:1:5: imaginary literals are not supported"},
		{"x = 012", "t.py:1:5: leading zeros in decimal integer literals are not permitted"},
		{"x = 1__0", "t.py:1:5: invalid decimal literal"},
		{"x = 1_", "t.py:1:5: invalid decimal literal"},
		{"x = 0x", "t.py:1:5: invalid hexadecimal literal"},
		{"x = 0b102", "t.py:1:5: invalid numeric literal"},
		{"x = 0o8", "t.py:1:5: invalid octal literal"},
		{"x = 1e", "t.py:1:5: invalid float literal: exponent has no digits"},
		{"x = 12abc", `t.py:1:5: invalid numeric literal "12a"`},
		{"x = $", `t.py:1:5: invalid character '$'`},
		{"x = !a", "t.py:1:5: invalid character '!' (use 'not' or '!=')"},
		{"x = a \\ b", "t.py:1:7: unexpected character after line continuation character"},
		{"x = (1,\n", `t.py:1:5: "(" was never closed`},
		{"x = [(1,\n  2), {3,\n", `t.py:2:7: "{" was never closed`},
		{"x = '\\x4'", `t.py:1:6: truncated \x escape: want 2 hex digits`},
		{"x = '\\N{DASH}'", `t.py:1:6: named unicode escapes (\N{...}) are not supported`},
		{"x = b'é'", "t.py:1:7: bytes literal may contain only ASCII characters"},
		{"x = \xff", "t.py:1:5: invalid UTF-8 encoding"},
		{"x = a\\", "t.py:1:6: unexpected character after line continuation character"},
		{"x = 1  # caf\xe9\n", "t.py:1:13: invalid UTF-8 encoding in comment"},
		{"x = 1  # a\x00\n", "t.py:1:11: NUL byte in source"},
		{"x = 'a\x00'\n", "t.py:1:7: NUL byte in source"},
		{"x = \x00\n", `t.py:1:5: invalid character '\x00'`},
	}
	for _, tt := range tests {
		_, err := Scan("t.py", []byte(tt.src))
		if err == nil {
			t.Errorf("%q: no error, want %q", tt.src, tt.want)
			continue
		}
		first := err.(ErrorList)[0].Error()
		if !strings.HasPrefix(first, tt.want) {
			t.Errorf("%q:\n got %s\nwant %s", tt.src, err, tt.want)
		}
	}
}
