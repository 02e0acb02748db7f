package torch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUNetExports exports a small U-Net as segmentation code writes it (testdata/unet.py:
// F.max_pool2d down, F.interpolate up, bilinear by a scale factor and nearest to the skip's
// size, skips concatenated) with N = 3, and checks widejit's outputs against the three PyTorch
// modules run one by one.
func TestUNetExports(t *testing.T) {
	needTorch(t)
	out := t.TempDir()
	if code, _, stderr := runPy(t, nil, "exporters/torch/export.py", "--module", "exporters/torch/testdata/unet.py:UNet",
		"--n", "3", "--input", "x=2,3,20,20", "--out", out); code != 0 {
		t.Fatalf("export.py exited %d:\n%s", code, stderr)
	}
	cmd := exec.Command(buildWidejit(t), "run", filepath.Join(out, "graph.json"), "--device", "cpu",
		"--inputs", filepath.Join(out, "inputs.safetensors"), "--check", filepath.Join(out, "expected.safetensors"))
	cmd.Env = append(os.Environ(), "WIDEJIT_CACHE_DIR="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("widejit run --check: %v\n%s", err, b)
	}
}
