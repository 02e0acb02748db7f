package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kind separates what a key names; it becomes the database key prefix "<kind>/".
type Kind string

const (
	// KindKernel keys compiled kernel artifacts (PTX, cubin, serialized IR).
	KindKernel Kind = "k"
	// KindDecision keys autotuning decision records (JSON).
	KindDecision Kind = "d"
)

func (k Kind) valid() bool {
	if k == "" || len(k) > 8 {
		return false
	}
	for _, c := range k {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// Label is the kind's human name, used by stats and ls.
func (k Kind) Label() string {
	switch k {
	case KindKernel:
		return "kernel"
	case KindDecision:
		return "decision"
	}
	return string(k)
}

// Key identifies one cached record: its kind and the SHA-256 of its canonical field encoding.
type Key struct {
	Kind Kind
	Hash [sha256.Size]byte
}

// String is "<kind>/<hex hash>".
func (k Key) String() string { return string(k.Kind) + "/" + hex.EncodeToString(k.Hash[:]) }

// dbKey is the key as stored in Badger: "<kind>/" followed by the raw hash bytes.
func (k Key) dbKey() []byte {
	b := make([]byte, 0, len(k.Kind)+1+len(k.Hash))
	b = append(b, k.Kind...)
	b = append(b, '/')
	return append(b, k.Hash[:]...)
}

// keyFromDB parses a Badger key written by dbKey.
func keyFromDB(b []byte) (Key, bool) {
	i := strings.IndexByte(string(b), '/')
	if i <= 0 || len(b)-i-1 != sha256.Size {
		return Key{}, false
	}
	k := Key{Kind: Kind(b[:i])}
	copy(k.Hash[:], b[i+1:])
	return k, k.Kind.valid()
}

// Type tags of field values; part of the encoding, so never renumber them.
const (
	tagString  byte = 1
	tagInt     byte = 2
	tagBool    byte = 3
	tagBytes   byte = 4
	tagStrings byte = 5
	tagInts    byte = 6
	tagFloat   byte = 7
)

// keyEncodingVersion prefixes every encoding; change it when the encoding changes.
const keyEncodingVersion = "widejit-cache-key/v1"

// A KeyBuilder collects the named fields that determine an artifact. Add every input that
// changes the artifact (kernel text, specialization, launch options, backend, target, compiler
// version, codegen-relevant config as "config.<name>"); order of calls does not matter.
// The first misuse (empty or repeated name, invalid kind) is reported by Key.
type KeyBuilder struct {
	kind   Kind
	fields map[string][]byte // name -> tag byte + value encoding
	err    error
}

// NewKey starts a key of the given kind.
func NewKey(kind Kind) *KeyBuilder {
	b := &KeyBuilder{kind: kind, fields: map[string][]byte{}}
	if !kind.valid() {
		b.err = fmt.Errorf("cache key: kind %q must be 1-8 lowercase letters", kind)
	}
	return b
}

func (b *KeyBuilder) add(name string, tag byte, value []byte) *KeyBuilder {
	if b.err != nil {
		return b
	}
	if name == "" {
		b.err = fmt.Errorf("cache key: empty field name")
		return b
	}
	if _, dup := b.fields[name]; dup {
		b.err = fmt.Errorf("cache key: field %q set twice", name)
		return b
	}
	b.fields[name] = append([]byte{tag}, value...)
	return b
}

// String adds a string field.
func (b *KeyBuilder) String(name, v string) *KeyBuilder { return b.add(name, tagString, []byte(v)) }

// Bytes adds a byte-string field.
func (b *KeyBuilder) Bytes(name string, v []byte) *KeyBuilder { return b.add(name, tagBytes, v) }

// Int adds an integer field.
func (b *KeyBuilder) Int(name string, v int64) *KeyBuilder {
	return b.add(name, tagInt, binary.BigEndian.AppendUint64(nil, uint64(v)))
}

// Float adds a floating-point field (by its IEEE-754 bits, so -0 and 0 differ).
func (b *KeyBuilder) Float(name string, v float64) *KeyBuilder {
	return b.add(name, tagFloat, binary.BigEndian.AppendUint64(nil, math.Float64bits(v)))
}

// Bool adds a boolean field.
func (b *KeyBuilder) Bool(name string, v bool) *KeyBuilder {
	var x byte
	if v {
		x = 1
	}
	return b.add(name, tagBool, []byte{x})
}

// Strings adds an ordered list of strings (for example argument dtypes in signature order).
func (b *KeyBuilder) Strings(name string, v []string) *KeyBuilder {
	enc := binary.BigEndian.AppendUint64(nil, uint64(len(v)))
	for _, s := range v {
		enc = appendBytes(enc, []byte(s))
	}
	return b.add(name, tagStrings, enc)
}

// Ints adds an ordered list of integers (for example constexpr values in parameter order).
func (b *KeyBuilder) Ints(name string, v []int64) *KeyBuilder {
	enc := binary.BigEndian.AppendUint64(nil, uint64(len(v)))
	for _, x := range v {
		enc = binary.BigEndian.AppendUint64(enc, uint64(x))
	}
	return b.add(name, tagInts, enc)
}

// Map adds every entry of m as a field "<prefix><name>" (for example Map("config.", cfg)).
func (b *KeyBuilder) Map(prefix string, m map[string]string) *KeyBuilder {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.String(prefix+n, m[n])
	}
	return b
}

// Key returns the key, or the first error made while building it.
func (b *KeyBuilder) Key() (Key, error) {
	if b.err != nil {
		return Key{}, b.err
	}
	return Key{Kind: b.kind, Hash: sha256.Sum256(b.encode())}, nil
}

// encode is the canonical encoding: version, kind, field count, then per field in name order
// the length-prefixed name and the length-prefixed tagged value.
func (b *KeyBuilder) encode() []byte {
	names := make([]string, 0, len(b.fields))
	for n := range b.fields {
		names = append(names, n)
	}
	sort.Strings(names)
	enc := appendBytes(nil, []byte(keyEncodingVersion))
	enc = appendBytes(enc, []byte(b.kind))
	enc = binary.BigEndian.AppendUint64(enc, uint64(len(names)))
	for _, n := range names {
		enc = appendBytes(enc, []byte(n))
		enc = appendBytes(enc, b.fields[n])
	}
	return enc
}

func appendBytes(dst, v []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(len(v)))
	return append(dst, v...)
}
