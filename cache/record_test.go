package cache

import (
	"bytes"
	"testing"
	"time"
)

func TestRecordEncodingRoundTrip(t *testing.T) {
	dk := []byte("k/0123456789abcdef0123456789abcdef")
	for _, rec := range []*Record{
		{Kind: KindKernel},
		{Kind: KindKernel, Name: "wide_mlp", Backend: "ptx", Target: "sm_90", Meta: map[string]string{"b": "2", "a": "1"},
			Payload: []byte(".version 7.8"), Created: time.Unix(1700000000, 123).UTC()},
		{Kind: KindDecision, Name: "d", Payload: bytes.Repeat([]byte{0}, 5000)},
	} {
		got, err := decodeRecord(dk, encodeRecord(dk, rec))
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != rec.Kind || got.Name != rec.Name || got.Backend != rec.Backend || got.Target != rec.Target ||
			!got.Created.Equal(rec.Created) || !bytes.Equal(got.Payload, rec.Payload) || len(got.Meta) != len(rec.Meta) {
			t.Fatalf("round trip: got %+v, want %+v", got, rec)
		}
		for k, v := range rec.Meta {
			if got.Meta[k] != v {
				t.Fatalf("meta %q = %q, want %q", k, got.Meta[k], v)
			}
		}
	}
}

// Every single-byte change and every truncation of an encoded record is rejected.
func TestRecordRejectsEveryMutation(t *testing.T) {
	dk := []byte("k/key")
	enc := encodeRecord(dk, &Record{Kind: KindKernel, Name: "n", Target: "cpu", Meta: map[string]string{"r": "32"}, Payload: []byte("payload")})
	for i := range enc {
		m := bytes.Clone(enc)
		m[i] ^= 0x40
		if _, err := decodeRecord(dk, m); err == nil {
			t.Fatalf("flipping byte %d was accepted", i)
		}
	}
	for n := 0; n < len(enc); n++ {
		if _, err := decodeRecord(dk, enc[:n]); err == nil {
			t.Fatalf("truncation to %d bytes was accepted", n)
		}
	}
	if _, err := decodeRecord([]byte("k/other"), enc); err == nil {
		t.Fatal("a record was accepted under another key")
	}
}

// FuzzDecodeRecord: decoding arbitrary bytes never panics, and whatever decodes re-encodes to
// the same bytes (so nothing but a genuine record passes).
func FuzzDecodeRecord(f *testing.F) {
	dk := []byte("k/fuzz")
	f.Add(encodeRecord(dk, &Record{Kind: KindKernel, Name: "n", Payload: []byte("p")}))
	f.Add([]byte("WJCR"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(dk, b)
		if err != nil {
			return
		}
		if re := encodeRecord(dk, rec); !bytes.Equal(re, b) {
			t.Fatalf("decoded record re-encodes differently")
		}
	})
}
