package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/widejit/widejit/graph"
)

// The real models (--real): torchvision CNNs, a GPT-style LM, a ViT, an MLP-Mixer and a dilated
// temporal conv net (bench/peers/real_models.py), exported with exporters/torch/export.py when their cell runs, so
// the graph is what a user's export gives today. A model whose export is refused (an op the
// exporter does not map yet) is reported as such, with the exporter's message, not dropped.
var realModels = []string{"resnet18", "regnet_y_400mf", "mobilenet_v3_small", "efficientnet_b0",
	"convnext_tiny", "shufflenet_v2_x0_5", "gpt", "vit", "mixer", "tcn"}

// realExtraModels (--real --extra) are the families' other members: deeper and wider relatives of
// realModels, each at its family member's input size, so that a speed-up found on one member is
// checked on its relatives.
var realExtraModels = []string{"resnet34", "resnet50", "regnet_x_400mf", "regnet_y_800mf",
	"mobilenet_v3_large", "efficientnet_b1", "shufflenet_v2_x1_0", "gpt_wide", "vit_p8"}

// realInputs is each real model's per-model input, export.py's --input syntax; it matches
// INPUTS in real_models.py (TestRealModelsTable).
var realInputs = map[string]string{
	"resnet18": "x=2,3,96,96", "regnet_y_400mf": "x=2,3,96,96", "shufflenet_v2_x0_5": "x=2,3,96,96",
	"mobilenet_v3_small": "x=2,3,64,64", "efficientnet_b0": "x=2,3,64,64", "convnext_tiny": "x=2,3,64,64",
	"gpt": "x=2,32:int64:0:256", "vit": "x=2,3,32,32", "mixer": "x=2,3,32,32", "tcn": "x=2,64,256",

	"resnet34": "x=2,3,96,96", "resnet50": "x=2,3,96,96", "regnet_x_400mf": "x=2,3,96,96",
	"regnet_y_800mf": "x=2,3,96,96", "shufflenet_v2_x1_0": "x=2,3,96,96",
	"mobilenet_v3_large": "x=2,3,64,64", "efficientnet_b1": "x=2,3,64,64",
	"gpt_wide": "x=2,64:int64:0:256", "vit_p8": "x=2,3,32,32",
}

// realDefaultNs is the real models' N sweep when --n is not given.
var realDefaultNs = []int{3, 8}

func isRealModel(name string) bool {
	return slices.Contains(realModels, name) || slices.Contains(realExtraModels, name)
}

// exportError is a real model export.py refused: the cell reports it instead of timings.
type exportError struct{ msg string }

func (e exportError) Error() string { return e.msg }

// loadModel is the graph of one cell: a zoo model's embedded graph, or a real model exported
// into dir/export by export.py (N instances from --seed).
func (c *config) loadModel(model string, n int, dir string) (*graph.Graph, error) {
	if !isRealModel(model) {
		return loadZooModel(model, n)
	}
	script, err := findRepoFile(c.exportScript)
	if err != nil {
		return nil, err
	}
	modFile, err := findRepoFile("bench/peers/real_models.py")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "export")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(c.python, script, "--module", modFile+":"+model, "--n", fmt.Sprint(n),
		"--input", realInputs[model], "--seed", fmt.Sprint(c.seed), "--out", out)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, fmt.Errorf("%s: running %s: %w", model, c.python, err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return nil, exportError{strings.TrimPrefix(lines[len(lines)-1], "export.py: error: ")}
	}
	return graph.Load(filepath.Join(out, "graph.json"))
}

// findRepoFile resolves a repository path against the working directory, then against the
// repository root above this source file (go test runs in bench/).
func findRepoFile(path string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		return filepath.Abs(path)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		alt := filepath.Join(filepath.Dir(filepath.Dir(file)), path)
		if _, err := os.Stat(alt); err == nil {
			return alt, nil
		}
	}
	return "", fmt.Errorf("%s not found (run from the repository root)", path)
}
