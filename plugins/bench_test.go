package plugins

import (
	"context"
	"testing"
)

// BenchmarkChoose measures one call into a pooled Go plugin instance (request encoding, the
// guest's JSON work, response decoding and checks).
func BenchmarkChoose(b *testing.B) {
	if buildErr != nil {
		b.Skipf("cannot build the test plugins: %v", buildErr)
	}
	p, err := Load(context.Background(), hostileWasm, testOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	req := sampleRequest("ok")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Choose(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
