package outputs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/widejit/widejit/graph"
)

// Metadata keys of an output file (besides "graph", the graph file as given): the models it
// holds, out of how many, and the identity of the graph and weights that computed them.
const (
	metaModels   = "widejit.models"        // "LO:HI": rows [0, HI-LO) are models [LO, HI)
	metaN        = "widejit.n"             // the graph's N
	metaIdentity = "widejit.graph_sha256"  // graph.Identity: graph.json and the weights' content
	metaShard    = "widejit.shard"         // "I/K" when written by run --shard
	metaInputs   = "widejit.inputs"        // the inputs' identity: InputsFile or InputsGenerated
	metaVersion  = "widejit.output_format" // metaFormat
	metaFormat   = "2"                     // 2: with metaInputs
)

// Metadata is the metadata of an output file holding g's models computed on inputs (their
// identity: InputsFile or InputsGenerated); shard is [I, K] when they are shard I of K (run
// --shard), else nil.
func Metadata(g *graph.Graph, shard *[2]int, inputs string) (map[string]string, error) {
	id, err := g.Identity()
	if err != nil {
		return nil, err
	}
	lo, hi, total := g.ModelRange()
	meta := map[string]string{"graph": g.File, metaModels: fmt.Sprintf("%d:%d", lo, hi), metaN: strconv.Itoa(total),
		metaIdentity: id, metaInputs: inputs, metaVersion: metaFormat}
	if shard != nil {
		meta[metaShard] = fmt.Sprintf("%d/%d", shard[0], shard[1])
	}
	return meta, nil
}

// InputsFile is the identity of inputs read from path: the SHA-256 of the whole file, the
// same for every shard (each reads its rows of all N). The file is streamed, not held.
func InputsFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing the inputs %s: %w", path, err)
	}
	return "file sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// InputsGenerated is the identity of inputs generated from seed at batch size batch.
func InputsGenerated(seed int64, batch int) string {
	return fmt.Sprintf("generated seed=%d batch=%d", seed, batch)
}
