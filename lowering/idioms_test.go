package lowering

import (
	"path/filepath"
	"strings"
	"testing"
)

// The PyTorch idioms of issue 12 (testdata/idioms, made by testdata/make_idiom_fixtures.py
// from testdata/idiom_models.py): indexing and slicing as views, shape-derived scalars, masks
// (masked_fill, where, comparisons, tril/triu), rsqrt, nn.Transformer* layers decomposed by the
// exporter, nn.MultiheadAttention with masks, and the Flux/DiT blocks, each against N PyTorch
// modules run one by one.
func TestIdiomFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/idioms/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures: run /usr/bin/python3 lowering/testdata/make_idiom_fixtures.py")
	}
	for _, dir := range dirs {
		for _, v := range exampleVariants {
			// every variant on the N=3 fixtures, the default elsewhere
			if v.name != "fused-batched" && !strings.HasSuffix(dir, "_n3") {
				continue
			}
			dir, v := dir, v
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) { checkFixtureCPU(t, dir, v.opts) })
		}
	}
}
