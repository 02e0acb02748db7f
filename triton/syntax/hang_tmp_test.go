package syntax

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestHangTmp(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.py")
	var seeds [][]byte
	for _, p := range files {
		b, _ := os.ReadFile(p)
		seeds = append(seeds, b)
	}
	r := rand.New(rand.NewSource(1))
	deadline := time.Now().Add(20 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		src := append([]byte(nil), seeds[r.Intn(len(seeds))]...)
		for k := r.Intn(4) + 1; k > 0; k-- {
			i := r.Intn(len(src))
			switch r.Intn(3) {
			case 0:
				src[i] = byte(r.Intn(128))
			case 1:
				src = append(src[:i], src[i+1:]...)
			case 2:
				j := r.Intn(len(src))
				src = append(src[:i], append([]byte{src[j]}, src[i:]...)...)
			}
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				os.WriteFile("/tmp/c1smoke/hang.py", src, 0o644)
				panic("hang; input in /tmp/c1smoke/hang.py")
			}
		}()
		ParseFile("f.py", src)
		close(done)
		n++
	}
	t.Logf("%d inputs", n)
}
