package outputs

import (
	"fmt"
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
	metaVersion  = "widejit.output_format" // metaFormat
	metaFormat   = "1"
)

// Metadata is the metadata of an output file holding g's models; shard is [I, K] when they
// are shard I of K (run --shard), else nil.
func Metadata(g *graph.Graph, shard *[2]int) (map[string]string, error) {
	id, err := g.Identity()
	if err != nil {
		return nil, err
	}
	lo, hi, total := g.ModelRange()
	meta := map[string]string{"graph": g.File, metaModels: fmt.Sprintf("%d:%d", lo, hi), metaN: strconv.Itoa(total),
		metaIdentity: id, metaVersion: metaFormat}
	if shard != nil {
		meta[metaShard] = fmt.Sprintf("%d/%d", shard[0], shard[1])
	}
	return meta, nil
}
