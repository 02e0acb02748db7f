package autotune

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
)

// keyVersion changes whenever the key or the record format changes meaning, so old records
// are not misread.
const keyVersion = "v1"

// Key is the store key of a measured decision for p and candidates. It covers the op chain,
// the shapes with the batch (dimension 0 of the first input) rounded up to a power of two and
// every other dimension exact, the dtypes, N exactly, the device's identity, and a hash of the
// candidate set (ids, strategies and parameters, in any order). Problems that share a key
// reuse one measurement: batches 65..128 share the decision measured at any of them.
func Key(p Problem, candidates []Candidate) string {
	var b strings.Builder
	b.WriteString("autotune/")
	b.WriteString(keyVersion)
	b.WriteString("/ops=")
	b.WriteString(strings.Join(p.OpChain, ","))
	b.WriteString("/shapes=")
	for i, shape := range p.Shapes {
		if i > 0 {
			b.WriteByte(',')
		}
		for j, d := range shape {
			if j > 0 {
				b.WriteByte('x')
			}
			if i == 0 && j == 0 {
				b.WriteString("b")
				d = BucketBatch(d)
			}
			b.WriteString(strconv.Itoa(d))
		}
	}
	b.WriteString("/dtypes=")
	b.WriteString(strings.Join(p.DTypes, ","))
	fmt.Fprintf(&b, "/n=%d/device=%s/candidates=%s", p.N, DeviceIdentity(p.Device), CandidateSetHash(candidates))
	return b.String()
}

// PluginKey is the store key of the answer of the plugin with hash pluginHash for the problem
// whose measured key is key: a changed plugin is asked again.
func PluginKey(key, pluginHash string) string {
	return key + "/plugin=" + pluginHash
}

// BucketBatch rounds a batch size up to the next power of two (sizes below 1 map to 1).
func BucketBatch(b int) int {
	if b <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(b-1))
}

// DeviceIdentity names a device for decision keys: kind, name, compute capability, for
// devices that run programs on host threads the worker count (which changes the timings),
// and the backend's options; memory size is left out.
func DeviceIdentity(d DeviceInfo) string {
	id := d.Kind + ":" + d.Name
	if d.ComputeCapability != "" {
		id += ":sm" + d.ComputeCapability
	}
	if d.Capabilities.HostThreads {
		id += ":" + strconv.Itoa(d.Cores) + "cores"
	}
	if len(d.BackendOptions) > 0 {
		opts := make([]string, 0, len(d.BackendOptions))
		for k, v := range d.BackendOptions {
			opts = append(opts, strconv.Quote(k)+"="+strconv.Quote(v))
		}
		sort.Strings(opts)
		id += ":options{" + strings.Join(opts, ",") + "}"
	}
	return id
}

// CandidateSetHash is a short hash of the candidates' ids, strategies and parameters,
// independent of their order.
func CandidateSetHash(candidates []Candidate) string {
	sorted := append([]Candidate(nil), candidates...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	// encoding/json writes map keys sorted, so the encoding is canonical.
	data, err := json.Marshal(sorted)
	if err != nil {
		panic(err) // strings and ints always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
