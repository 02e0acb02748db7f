package safetensors

import (
	"encoding/json"
	"github.com/widejit/widejit/internal/half"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// numpyReader reads a safetensors file with nothing but json and numpy, and prints every
// tensor as float64 lists, plus numpy's float16 and bfloat16-by-truncation-and-rounding of
// probe values: an independent reference for Encode and the half conversions.
const numpyReader = `
import json, struct, sys
import numpy as np
path, probes = sys.argv[1], json.load(open(sys.argv[2]))
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
dt = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
out = {}
for k, v in hdr.items():
    if k == "__metadata__":
        continue
    b, e = v["data_offsets"]
    if v["dtype"] == "BF16":
        a = (np.frombuffer(raw[8 + n + b: 8 + n + e], "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.frombuffer(raw[8 + n + b: 8 + n + e], dt[v["dtype"]])
    out[k] = {"shape": list(a.reshape(v["shape"]).shape), "values": [float(x) for x in a.astype(np.float64)]}
out["__f16__"] = [int(x) for x in np.array(probes, dtype=np.float32).astype(np.float16).view(np.uint16)]
print(json.dumps(out))
`

func TestAgainstNumpy(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("needs /usr/bin/python3 with numpy (bash .ci/setup)")
	}
	r := rand.New(rand.NewPCG(1, 2))
	probes := []float32{0, 1, -1, 65504, 65519, 65520, 1e-8, 6e-8, 3e-5, 0.1, 1.0 / 3}
	for i := 0; i < 2000; i++ {
		probes = append(probes, float32(math.Ldexp(r.Float64()*2-1, r.IntN(40)-25)))
	}
	vals := []float64{1.5, -2.25, 1e-3, 3.14159}
	var ts []*Tensor
	for _, d := range []DType{F32, F64, F16, BF16} {
		tt, _ := FromFloat64s("f"+string(d), d, []int{2, 2}, vals)
		ts = append(ts, tt)
	}
	for _, d := range []DType{I64, I32, I16, I8, U8, BOOL} {
		tt, _ := FromInt64s("i"+string(d), d, []int{4}, []int64{0, 1, 7, 100})
		ts = append(ts, tt)
	}
	dir := t.TempDir()
	file, probeFile, script := filepath.Join(dir, "t.safetensors"), filepath.Join(dir, "probes.json"), filepath.Join(dir, "read.py")
	if err := Write(file, ts, map[string]string{"by": "go"}); err != nil {
		t.Fatal(err)
	}
	pj, _ := json.Marshal(probes)
	os.WriteFile(probeFile, pj, 0o644)
	os.WriteFile(script, []byte(numpyReader), 0o644)
	out, err := exec.Command(py, script, file, probeFile).Output()
	if err != nil {
		t.Fatalf("numpy reader: %v", err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for _, tt := range ts {
		var v struct {
			Shape  []int
			Values []float64
		}
		json.Unmarshal(got[tt.Name], &v)
		mine, _ := tt.Float64s()
		if len(v.Values) != len(mine) {
			t.Fatalf("%s: numpy read %d values, want %d", tt.Name, len(v.Values), len(mine))
		}
		for i := range mine {
			if v.Values[i] != mine[i] {
				t.Errorf("%s[%d]: numpy reads %v, Go wrote %v", tt.Name, i, v.Values[i], mine[i])
			}
		}
	}
	var f16 []uint16
	json.Unmarshal(got["__f16__"], &f16)
	for i, p := range probes {
		if mine := half.F32ToF16(p); mine != f16[i] {
			t.Fatalf("float16(%v): Go %#04x, numpy %#04x", p, mine, f16[i])
		}
	}
}
