package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"
)

// RecordFormat is the version of the record encoding written by this build. Records of another
// format are treated as misses (and replaced when the caller puts a fresh one).
const RecordFormat = 1

var recordMagic = []byte("WJCR")

// A Record is one cached value: an artifact (or a decision) and what describes it.
type Record struct {
	Kind    Kind              // set from the key by Put
	Name    string            // kernel (or decision) name
	Backend string            // "cpu", "ptx", ...
	Target  string            // "cpu", "sm_90", ...
	Meta    map[string]string // shared memory, registers, entry name, ...
	Payload []byte            // PTX text, cubin, serialized IR, decision JSON
	Created time.Time         // set by Put when zero
}

// errCorrupt marks a record that fails to decode or to match its checksum.
var errCorrupt = errors.New("corrupt cache record")

// encodeRecord serializes rec for dbKey: magic, format, fields, then SHA-256(dbKey || all
// preceding bytes). Binding the key into the checksum catches a value served for the wrong key.
func encodeRecord(dbKey []byte, rec *Record) []byte {
	var b []byte
	b = append(b, recordMagic...)
	b = binary.BigEndian.AppendUint16(b, RecordFormat)
	b = appendBytes(b, []byte(rec.Kind))
	b = appendBytes(b, []byte(rec.Name))
	b = appendBytes(b, []byte(rec.Backend))
	b = appendBytes(b, []byte(rec.Target))
	var created int64 // 0 stands for the zero time, which UnixNano cannot express
	if !rec.Created.IsZero() {
		created = rec.Created.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(created))
	names := make([]string, 0, len(rec.Meta))
	for n := range rec.Meta {
		names = append(names, n)
	}
	sort.Strings(names)
	b = binary.BigEndian.AppendUint64(b, uint64(len(names)))
	for _, n := range names {
		b = appendBytes(b, []byte(n))
		b = appendBytes(b, []byte(rec.Meta[n]))
	}
	b = appendBytes(b, rec.Payload)
	sum := recordChecksum(dbKey, b)
	return append(b, sum[:]...)
}

func recordChecksum(dbKey, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(dbKey))))
	h.Write(dbKey)
	h.Write(body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// decodeRecord parses and verifies a value read for dbKey. The returned record owns its memory
// (it does not alias v, which Badger may reuse).
func decodeRecord(dbKey, v []byte) (*Record, error) {
	if len(v) < len(recordMagic)+2+sha256.Size {
		return nil, fmt.Errorf("%w: %d bytes is too short", errCorrupt, len(v))
	}
	body, sum := v[:len(v)-sha256.Size], v[len(v)-sha256.Size:]
	if !bytes.Equal(body[:len(recordMagic)], recordMagic) {
		return nil, fmt.Errorf("%w: bad magic", errCorrupt)
	}
	want := recordChecksum(dbKey, body)
	if !bytes.Equal(sum, want[:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	r := recordReader{b: body[len(recordMagic):]}
	if f := r.u16(); f != RecordFormat {
		return nil, fmt.Errorf("%w: record format %d, this build reads %d", errCorrupt, f, RecordFormat)
	}
	rec := &Record{
		Kind:    Kind(r.bytes()),
		Name:    string(r.bytes()),
		Backend: string(r.bytes()),
		Target:  string(r.bytes()),
	}
	if created := int64(r.u64()); created != 0 {
		rec.Created = time.Unix(0, created).UTC()
	}
	n := r.u64()
	if n > uint64(len(body)) {
		return nil, fmt.Errorf("%w: metadata count %d", errCorrupt, n)
	}
	if n > 0 {
		rec.Meta = make(map[string]string, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			k := string(r.bytes())
			rec.Meta[k] = string(r.bytes())
		}
	}
	rec.Payload = bytes.Clone(r.bytes())
	if rec.Payload == nil {
		rec.Payload = []byte{}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(r.b))
	}
	return rec, nil
}

// recordReader reads the fields of a record body, remembering the first overrun.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: truncated field", errCorrupt)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *recordReader) u16() uint16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

func (r *recordReader) u64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func (r *recordReader) bytes() []byte { return r.take(r.u64()) }
