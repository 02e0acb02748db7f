package templates

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/syntax"
)

// sampleData fills the templates of this package's own families with a small but complete
// example (an epilogue load, a body, extra arguments); lowering's tests run every template
// end to end against PyTorch.
var sampleData = map[string]map[string]any{
	"elementwise.py": {
		"Fn": "k_add_relu", "Header": []string{"serves node add (add)"},
		"Operands": []map[string]any{
			{"Name": "in0", "StrideArgs": []string{}, "Load": "tl.load(in0_ptr + model * in0_mstride + idx, mask=mask, other=0).to(tl.float32)"},
			{"Name": "in1", "StrideArgs": []string{"in1_s1"}, "Load": "tl.load(in1_ptr + model * in1_mstride + c1 * in1_s1, mask=mask, other=0).to(tl.float32)"},
		},
		"OutStrideArgs": []string{}, "SizeArgs": []string{"size1"}, "ExtraArgs": []string{}, "Rows": false,
		"Coords": []string{"c1 = rem % size1", "rem = rem // size1", "c0 = rem"},
		"Body":   []string{"t1 = in0 + in1", "t2 = tl.maximum(t1, 0.0)", "y = t2"}, "OutOffset": "idx",
	},
	"matmul.py": {
		"Fn": "k_linear", "Header": []string{"serves node fc (linear)"},
		"Epilogue":     []map[string]string{{"Name": "e0", "Load": "tl.load(e0_ptr + model * e0_mstride + rn[None, :] * e0_s2, mask=(rn[None, :] < N), other=0).to(tl.float32)"}},
		"EpilogueArgs": []string{"e0_ptr", "e0_mstride", "e0_s2", "head0_ptr", "head0_mstride", "head0_s", "head_eps"}, "ExtraArgs": []string{},
		"Body": []string{"t1 = acc + e0", "y = t1"}, "BRowsAlongK": true, "SplitBatch": true,
		"HeadLoads": []map[string]string{{"Name": "head0", "Load": "tl.load(head0_ptr + model * head0_mstride + rk[None, :] * head0_s, mask=rk[None, :] < K, other=0.0).to(tl.float32)"}},
		"Head": []string{"head_d = a - tl.sum(a, axis=1)[:, None] / K",
			"a = head_d * (1.0 / tl.sqrt(tl.sum(head_d * head_d, axis=1)[:, None] / K + head_eps))", "a = a * head0"},
	},
	"mlp.py": {
		"Fn": "k_mlp", "Header": []string{"serves node fc1 (linear)", "serves node fc2 (linear)"},
		"HiddenArgs":  []string{"hid0_ptr", "hid0_mstride", "hid0_s2"},
		"HiddenLoads": []map[string]string{{"Name": "hid0", "Load": "tl.load(hid0_ptr + model * hid0_mstride + rh[None, :] * hid0_s2, mask=(rh[None, :] < H), other=0).to(tl.float32)"}},
		"Hidden":      []string{"ht1 = h + hid0", "h = tl.maximum(ht1, 0.0)"}, "Rows": true,
		"Epilogue": []map[string]string{}, "EpilogueArgs": []string{}, "ExtraArgs": []string{}, "Body": []string{"y = acc"},
		"HeadLoads": []map[string]string{}, "Head": []string{},
	},
	"norm.py": {
		"Fn": "k_ln", "Header": []string{"serves node ln (layer_norm)"}, "Center": true, "HasW": true, "HasB": false,
		"Epilogue": []map[string]string{}, "EpilogueArgs": []string{}, "ExtraArgs": []string{}, "Body": []string{"y = acc"},
	},
	"reduce.py":    {"Fn": "k_softmax", "Header": []string{"serves node sm (softmax)"}, "Kind": "log_softmax"},
	"embedding.py": {"Fn": "k_emb", "Header": []string{"serves node emb (embedding)"}},
	"rnn.py": {"Fn": "k_lstm", "Header": []string{"serves node rec (lstm_l0_reverse)"}, "Cell": "lstm",
		"HasBias": true, "HasH0": true, "Reverse": true, "Stationary": false},
}

func TestTemplatesRenderToTriton(t *testing.T) {
	names := Names()
	for name, data := range sampleData {
		if !contains(names, name) {
			t.Errorf("template %s is not embedded (have %v)", name, names)
			continue
		}
		text, err := Render(name, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		fn := data["Fn"].(string)
		for _, want := range []string{"import triton\n", "import triton.language as tl\n", "@triton.jit\ndef " + fn + "(", "# serves node "} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: rendered kernel lacks %q:\n%s", name, want, text)
			}
		}
		f, err := syntax.ParseFile(name, []byte(text))
		if err != nil {
			t.Errorf("%s: rendered kernel does not parse: %v\n%s", name, err, text)
			continue
		}
		found := false
		for _, d := range f.Funcs {
			found = found || d.Name == fn
		}
		if !found {
			t.Errorf("%s: no function %s in the parsed kernel", name, fn)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	if _, err := Render("nope.py", nil); err == nil || !strings.Contains(err.Error(), `no kernel template "nope.py"`) {
		t.Errorf("unknown template: %v", err)
	}
	// a field the template needs is missing: an error naming the template, never a half kernel
	if _, err := Render("reduce.py", map[string]any{"Fn": "k"}); err == nil || !strings.Contains(err.Error(), "reduce.py") {
		t.Errorf("missing data: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
