package safetensors

import (
	"bytes"
	"encoding/binary"
	"github.com/widejit/widejit/internal/half"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeRaw(t *testing.T, header string, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b.Write(n[:])
	b.WriteString(header)
	b.Write(data)
	p := filepath.Join(t.TempDir(), "t.safetensors")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadHandWrittenFile(t *testing.T) {
	// Two tensors laid out by hand: a F32 [2] holding 1.5, -2 and an I64 [1] holding 7.
	data := []byte{0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0, 7, 0, 0, 0, 0, 0, 0, 0}
	p := writeRaw(t, `{"__metadata__":{"k":"v"},"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := strings.Join(f.Names(), ","); got != "a,b" {
		t.Fatalf("names %s", got)
	}
	if f.Metadata()["k"] != "v" {
		t.Fatalf("metadata %v", f.Metadata())
	}
	a, err := f.Read("a")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := a.Float32s()
	if len(v) != 2 || v[0] != 1.5 || v[1] != -2 {
		t.Fatalf("a = %v", v)
	}
	b, _ := f.Read("b")
	iv, _ := b.Int64s()
	if len(iv) != 1 || iv[0] != 7 {
		t.Fatalf("b = %v", iv)
	}
	if info, ok := f.Info("b"); !ok || info.DType != I64 || info.Begin != 8 || info.End != 16 {
		t.Fatalf("info %+v", info)
	}
	if _, err := f.Read("zz"); err == nil || !strings.Contains(err.Error(), `"zz"`) {
		t.Fatalf("missing tensor error: %v", err)
	}
}

func TestWriteIsDeterministicAndAligned(t *testing.T) {
	ts := []*Tensor{
		FromFloat32s("z", []int{2, 2}, []float32{1, 2, 3, 4}),
		FromFloat32s("a", []int{}, []float32{5}),
	}
	var b1, b2 bytes.Buffer
	if err := Encode(&b1, ts, map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	if err := Encode(&b2, []*Tensor{ts[1], ts[0]}, map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Fatal("output depends on input order")
	}
	n := binary.LittleEndian.Uint64(b1.Bytes())
	if n%8 != 0 {
		t.Fatalf("header length %d not 8-aligned", n)
	}
	hdr := string(b1.Bytes()[8 : 8+n])
	want := `{"__metadata__":{"x":"y"},"a":{"data_offsets":[0,4],"dtype":"F32","shape":[]},"z":{"data_offsets":[4,20],"dtype":"F32","shape":[2,2]}}`
	if strings.TrimRight(hdr, " ") != want {
		t.Fatalf("header\n%s\nwant\n%s", hdr, want)
	}
}

func TestRoundTripAllDTypes(t *testing.T) {
	var ts []*Tensor
	for _, d := range []DType{F32, F16, BF16, F64} {
		tt, err := FromFloat64s("f_"+string(d), d, []int{3}, []float64{1, -0.5, 256})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tt)
	}
	for _, d := range []DType{I64, I32, I16, I8, U8, BOOL} {
		tt, err := FromInt64s("i_"+string(d), d, []int{3}, []int64{0, 1, 100})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tt)
	}
	p := filepath.Join(t.TempDir(), "all.safetensors")
	if err := Write(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, want := range ts {
		got, err := f.Read(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType != want.DType || !bytes.Equal(got.Data, want.Data) || len(got.Shape) != 1 || got.Shape[0] != 3 {
			t.Fatalf("%s: got %+v want %+v", want.Name, got, want)
		}
		v, err := got.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		exp := []float64{1, -0.5, 256}
		if !want.DType.IsFloat() {
			exp = []float64{0, 1, 100}
			if want.DType == BOOL {
				exp = []float64{0, 1, 1}
			}
		}
		for i := range v {
			if v[i] != exp[i] {
				t.Fatalf("%s[%d] = %v want %v", want.Name, i, v[i], exp[i])
			}
		}
	}
}

func TestBadFiles(t *testing.T) {
	f32x2 := make([]byte, 8)
	cases := []struct {
		name, header string
		data         []byte
		want         string
	}{
		{"bad json", `{"a":`, nil, "header JSON"},
		{"not object", `[1]`, nil, "not a JSON object"},
		{"unknown dtype", `{"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2), `tensor "a": unsupported dtype "F8"`},
		{"size mismatch", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, f32x2, `tensor "a": F32 shape [3] needs 12 bytes`},
		{"past end", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, f32x2, `tensor "a": data_offsets [0, 16] run past the end`},
		{"overlap", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2, `overlap`},
		{"gap", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2, `tensor "a": gap of 4 bytes`},
		{"trailing bytes", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32x2, "4 bytes after the last tensor"},
		{"duplicate", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2, `names "a" twice`},
		{"unknown field", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, f32x2, `tensor "a": header entry`},
		{"missing field", `{"a":{"dtype":"F32","shape":[2]}}`, f32x2, `needs dtype, shape and data_offsets`},
		{"negative dim", `{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, f32x2, "negative dimension"},
		{"reversed offsets", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, f32x2, "not an ordered byte range"},
		{"bad metadata", `{"__metadata__":{"k":1}}`, nil, "__metadata__ must map strings"},
		{"huge shape", `{"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, f32x2, "too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeRaw(t, c.header, c.data)
			_, err := Open(p)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file and contain %q", err, c.want)
			}
		})
	}
}

func TestTruncatedAndLyingLengths(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte{1, 2, 3}, 0o644)
	if _, err := Open(short); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("short file: %v", err)
	}
	huge := filepath.Join(dir, "huge")
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], 1<<40)
	os.WriteFile(huge, b[:], 0o644)
	if _, err := Open(huge); err == nil || !strings.Contains(err.Error(), "not a safetensors file") || strings.Contains(err.Error(), "1099511627776") {
		t.Fatalf("huge header: %v", err)
	}
	lie := filepath.Join(dir, "lie")
	binary.LittleEndian.PutUint64(b[:], 100)
	os.WriteFile(lie, b[:], 0o644)
	if _, err := Open(lie); err == nil || !strings.Contains(err.Error(), "runs past the end") {
		t.Fatalf("lying header length: %v", err)
	}
	// A valid file cut short loses its last tensor's bytes.
	full := filepath.Join(dir, "full")
	if err := Write(full, []*Tensor{FromFloat32s("w", []int{4}, []float32{1, 2, 3, 4})}, nil); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(full)
	os.WriteFile(full, raw[:len(raw)-3], 0o644)
	if _, err := Open(full); err == nil || !strings.Contains(err.Error(), `tensor "w"`) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestWriteRejectsBadTensors(t *testing.T) {
	var b bytes.Buffer
	bad := &Tensor{Name: "x", DType: F32, Shape: []int{3}, Data: make([]byte, 8)}
	if err := Encode(&b, []*Tensor{bad}, nil); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("size mismatch: %v", err)
	}
	a := FromFloat32s("a", []int{1}, []float32{1})
	if err := Encode(&b, []*Tensor{a, a}, nil); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestFloat16KnownValues(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {0.5, 0x3800}, {float32(math.Ldexp(1, -24)), 0x0001},
		{float32(math.Ldexp(1, -14)), 0x0400}, {0, 0}, {float32(math.Inf(1)), 0x7c00}, {1e6, 0x7c00},
		{0.1, 0x2e66}, {1 + 1.0/2048, 0x3c00} /* tie rounds to even */, {1 + 3.0/2048, 0x3c02}}
	for _, c := range cases {
		if got := half.F32ToF16(c.f); got != c.h {
			t.Errorf("half.F32ToF16(%v) = %#04x want %#04x", c.f, got, c.h)
		}
	}
	// Every finite half value survives a round trip through float32.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 {
			continue
		}
		if back := half.F32ToF16(half.F16ToF32(uint16(h))); back != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, half.F16ToF32(uint16(h)), back)
		}
	}
	if half.F32ToBF16(1) != 0x3f80 || half.BF16ToF32(0xc000) != -2 || half.F32ToBF16(1+1.0/256) != 0x3f80 {
		t.Fatal("bfloat16 conversions")
	}
}
