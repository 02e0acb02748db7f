package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/widejit/widejit/internal/memlimit"
)

// DType is a safetensors element type name as written in the header.
type DType string

// The supported dtypes.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	BOOL DType = "BOOL"
)

var dtypeSizes = map[DType]int{F32: 4, F16: 2, BF16: 2, F64: 8, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1}

// Size is the byte size of one element, 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// Valid reports whether d is a supported dtype.
func (d DType) Valid() bool { return dtypeSizes[d] != 0 }

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 || d == F64 }

// CheckRTol is the default relative tolerance for comparing a computed tensor of dtype d with
// a reference (|got - want| <= atol + rtol * max|want|): 1e-4 for every dtype but the half
// precisions, whose defaults are torch.testing's: bfloat16 1.6e-2 (2 ulps of its 8-bit
// mantissa) and float16 1e-3. A half-precision reference rounds every op's result to the
// half type, while widejit's fused kernels keep fp32 intermediates and round once, so the two
// differ by a few ulps of the output, far above fp32's summation-order differences.
func (d DType) CheckRTol() float64 {
	switch d {
	case BF16:
		return 1.6e-2
	case F16:
		return 1e-3
	}
	return 1e-4
}

// MaxHeaderSize bounds the JSON header; larger claims are treated as a corrupt file.
const MaxHeaderSize = 100 << 20

// Tensor is one named tensor held in memory; Data is little-endian, row-major.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Numel is the number of elements (1 for a scalar of shape []).
func (t *Tensor) Numel() int { return numel(t.Shape) }

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// TensorInfo describes one tensor of an opened file without reading it.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	// Begin and End are byte offsets relative to the start of the data area.
	Begin, End int64
}

// File is an opened safetensors file whose header has been checked.
type File struct {
	path      string
	f         source
	infos     map[string]TensorInfo
	names     []string
	metadata  map[string]string
	dataStart int64
	maxTensor int64 // bytes one Read may allocate
}

// source is what a File reads: an *os.File, or memory (OpenMemory).
type source interface {
	io.ReaderAt
	Close() error
}

// memory is a source held in memory; closing it does nothing.
type memory struct{ *bytes.Reader }

func (memory) Close() error { return nil }

// Options bound what a File reads.
type Options struct {
	// MaxTensorBytes bounds one tensor read into memory (a sparse file can claim terabytes):
	// 0 means memlimit.Default() (80% of physical memory), negative means no bound.
	MaxTensorBytes int64
}

// Open opens path and reads and checks its header only.
func Open(path string) (*File, error) { return OpenWithOptions(path, Options{}) }

// OpenWithOptions is Open with bounds.
func OpenWithOptions(path string, opts Options) (*File, error) {
	f, st, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	sf, err := parseHeader(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.f = f
	sf.maxTensor = memlimit.Resolve(opts.MaxTensorBytes)
	return sf, nil
}

// OpenMemory is OpenWithOptions for a file's content held in memory (read, never copied);
// name stands for its path in messages.
func OpenMemory(name string, data []byte, opts Options) (*File, error) {
	sf, err := parseHeader(name, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	sf.f = memory{bytes.NewReader(data)}
	sf.maxTensor = memlimit.Resolve(opts.MaxTensorBytes)
	return sf, nil
}

// OpenRegular opens path for reading only if it is a regular file: a FIFO would block the
// open (or the reads) forever and /dev/zero never ends. The open itself does not block (it
// is non-blocking, checked, then made blocking again), so a FIFO is refused at once.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	return f, st, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

type headerEntry struct {
	DType       *DType   `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

func parseHeader(path string, r io.ReaderAt, size int64) (*File, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("safetensors %s: %s", path, fmt.Sprintf(format, args...))
	}
	var lenBuf [8]byte
	if size < 8 {
		return nil, fail("file is %d bytes, too short for the 8-byte header length", size)
	}
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fail("reading header length: %v", err)
	}
	// The length is the file's first 8 bytes: a file of another kind has text there, which
	// is never printed (a number that reads "root:x:0" as a header length is someone's data).
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fail("not a safetensors file: its first 8 bytes do not hold a header length up to %d", MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, fail("not a safetensors file, or truncated: its header length runs past the end of the %d-byte file", size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fail("reading header: %v", err)
	}
	sf := &File{path: path, infos: map[string]TensorInfo{}, dataStart: 8 + int64(n)}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fail("header is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail("header JSON: %v", err)
		}
		name := tok.(string) // object keys are always strings
		if _, dup := sf.infos[name]; dup || (name == "__metadata__" && sf.metadata != nil) {
			return nil, fail("header names %q twice", name)
		}
		if name == "__metadata__" {
			var md map[string]string
			if err := dec.Decode(&md); err != nil {
				return nil, fail("__metadata__ must map strings to strings: %v", err)
			}
			if md == nil {
				md = map[string]string{}
			}
			sf.metadata = md
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fail("header JSON: %v", err)
		}
		info, err := parseEntry(name, raw)
		if err != nil {
			return nil, fail("%v", err)
		}
		sf.infos[name] = info
		sf.names = append(sf.names, name)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail("header JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail("header has trailing data after the JSON object")
	}
	sort.Strings(sf.names)
	if err := checkLayout(sf, size-sf.dataStart); err != nil {
		return nil, fail("%v", err)
	}
	return sf, nil
}

func parseEntry(name string, raw json.RawMessage) (TensorInfo, error) {
	var e headerEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: header entry: %v", name, err)
	}
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: header entry needs dtype, shape and data_offsets", name)
	}
	if !e.DType.Valid() {
		return TensorInfo{}, fmt.Errorf("tensor %q: unsupported dtype %q (supported: F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL)", name, *e.DType)
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return TensorInfo{}, fmt.Errorf("tensor %q: data_offsets must be [begin, end], got %d numbers", name, len(offs))
	}
	if offs[0] < 0 || offs[1] < offs[0] {
		return TensorInfo{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] are not an ordered byte range", name, offs[0], offs[1])
	}
	want := int64(e.DType.Size())
	shape := make([]int, len(*e.Shape))
	for i, d := range *e.Shape {
		if d < 0 {
			return TensorInfo{}, fmt.Errorf("tensor %q: negative dimension %d in shape %v", name, d, *e.Shape)
		}
		if d != 0 && want > math.MaxInt64/d {
			return TensorInfo{}, fmt.Errorf("tensor %q: shape %v is too large", name, *e.Shape)
		}
		want *= d
		shape[i] = int(d)
	}
	if got := offs[1] - offs[0]; got != want {
		return TensorInfo{}, fmt.Errorf("tensor %q: %s shape %v needs %d bytes but data_offsets [%d, %d] hold %d",
			name, *e.DType, *e.Shape, want, offs[0], offs[1], got)
	}
	return TensorInfo{Name: name, DType: *e.DType, Shape: shape, Begin: offs[0], End: offs[1]}, nil
}

// checkLayout requires the tensors to tile the data area exactly.
func checkLayout(sf *File, dataSize int64) error {
	infos := make([]TensorInfo, 0, len(sf.infos))
	for _, name := range sf.names {
		infos = append(infos, sf.infos[name])
	}
	sort.SliceStable(infos, func(i, j int) bool {
		if infos[i].Begin != infos[j].Begin {
			return infos[i].Begin < infos[j].Begin
		}
		return infos[i].End < infos[j].End
	})
	var pos int64
	prev := ""
	for _, in := range infos {
		if in.End > dataSize {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] run past the end of the data (%d bytes; truncated file?)", in.Name, in.Begin, in.End, dataSize)
		}
		switch {
		case in.Begin < pos:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q", in.Name, in.Begin, in.End, prev)
		case in.Begin > pos:
			return fmt.Errorf("tensor %q: gap of %d bytes before its data at %d", in.Name, in.Begin-pos, in.Begin)
		}
		pos = in.End
		prev = in.Name
	}
	if pos != dataSize {
		return fmt.Errorf("%d bytes after the last tensor belong to no tensor", dataSize-pos)
	}
	return nil
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Names lists the tensor names, sorted.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Metadata is the header's "__metadata__" map (nil when absent).
func (f *File) Metadata() map[string]string { return f.metadata }

// Info describes tensor name; ok is false when the file has no such tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	in, ok := f.infos[name]
	if ok {
		in.Shape = append([]int(nil), in.Shape...)
	}
	return in, ok
}

// Read reads one tensor's bytes.
func (f *File) Read(name string) (*Tensor, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	if n := in.End - in.Begin; n > f.maxTensor {
		return nil, fmt.Errorf("safetensors %s: tensor %q is %s, more than the %s one read may take (a memory limit)",
			f.path, name, memlimit.Format(n), memlimit.Format(f.maxTensor))
	}
	data := make([]byte, in.End-in.Begin)
	if _, err := f.f.ReadAt(data, f.dataStart+in.Begin); err != nil {
		return nil, fmt.Errorf("safetensors %s: tensor %q: reading %d bytes at offset %d: %v", f.path, name, len(data), f.dataStart+in.Begin, err)
	}
	return &Tensor{Name: name, DType: in.DType, Shape: append([]int(nil), in.Shape...), Data: data}, nil
}

// Section is tensor name's bytes in the file, to read without holding them (a copy).
func (f *File) Section(name string) (*io.SectionReader, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	return io.NewSectionReader(f.f, f.dataStart+in.Begin, in.End-in.Begin), nil
}

// ReadAll reads every tensor, in name order.
func (f *File) ReadAll() ([]*Tensor, error) {
	out := make([]*Tensor, 0, len(f.names))
	for _, name := range f.names {
		t, err := f.Read(name)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Close closes the underlying file.
func (f *File) Close() error { return f.f.Close() }

// Encode writes tensors (sorted by name) and optional metadata in safetensors form.
func Encode(w io.Writer, tensors []*Tensor, metadata map[string]string) error {
	entries := make([]Entry, len(tensors))
	data := map[string][]byte{}
	for i, t := range tensors {
		entries[i] = Entry{Name: t.Name, DType: t.DType, Shape: t.Shape}
		if want := t.Numel() * t.DType.Size(); t.DType.Valid() && len(t.Data) != want {
			return fmt.Errorf("safetensors: tensor %q: %s shape %v needs %d bytes, has %d", t.Name, t.DType, t.Shape, want, len(t.Data))
		}
		data[t.Name] = t.Data
	}
	return EncodeStream(w, entries, metadata, func(w io.Writer, e Entry) error {
		_, err := w.Write(data[e.Name])
		return err
	})
}

// Entry is a tensor of a file written by EncodeStream: its name, dtype and shape.
type Entry struct {
	Name  string
	DType DType
	Shape []int
}

// Bytes is the size of the entry's data.
func (e Entry) Bytes() int64 { return int64(numel(e.Shape)) * int64(e.DType.Size()) }

// EncodeStream writes a safetensors file of entries (sorted by name) and optional metadata
// without holding their data: after the header, data writes each entry's bytes to w, in
// name order, exactly Bytes() of them.
func EncodeStream(w io.Writer, entries []Entry, metadata map[string]string, data func(w io.Writer, e Entry) error) error {
	sorted := append([]Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for i, t := range sorted {
		if t.Name == "__metadata__" || t.Name == "" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if i > 0 && sorted[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: tensor %q given twice", t.Name)
		}
		if !t.DType.Valid() {
			return fmt.Errorf("safetensors: tensor %q: unsupported dtype %q", t.Name, t.DType)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + t.Bytes()}}
		off += t.Bytes()
	}
	hdr, err := json.Marshal(header) // map keys come out sorted: deterministic
	if err != nil {
		return err
	}
	if pad := (8 - len(hdr)%8) % 8; pad > 0 {
		hdr = append(hdr, strings.Repeat(" ", pad)...)
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range sorted {
		cw := &countingWriter{w: w}
		if err := data(cw, t); err != nil {
			return err
		}
		if cw.n != t.Bytes() {
			return fmt.Errorf("safetensors: tensor %q: %d bytes written for its %d", t.Name, cw.n, t.Bytes())
		}
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Write writes tensors to path (through a temporary file renamed into place).
func Write(path string, tensors []*Tensor, metadata map[string]string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := Encode(tmp, tensors, metadata); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
