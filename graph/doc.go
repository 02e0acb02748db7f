// Package graph owns the graph format widejit.graph/v1 (docs/graph-format.md): it parses a
// graph.json, validates it, infers every node's output types, normalises attributes, checks
// the weights file (or initialises weights deterministically) and loads or generates inputs.
//
// Everything in a Graph is per model: shapes exclude the leading model dimension N, and dims
// in attributes are per-model dims, already made non-negative. Widening to N-first is the
// consumer's job (lowering/).
//
// # API
//
//	g, err := graph.Load("examples/mlp/graph.json")           // parse + validate + infer
//	g, err := graph.LoadWithOptions(path, graph.Options{N: 16}) // override n (init graphs only)
//	g, err := graph.Parse(path, data, graph.Options{})        // same, from bytes
//	g, err := graph.Parse(path, data, graph.Options{Weights: w}) // the weights file's bytes too
//
// A load error is a *graph.Error holding every Problem found (file, JSON path such as
// nodes[3].inputs[1], line:col, node name, message); errors.As(err, &gerr) to list them.
//
//	g.N                  // number of models
//	g.Inputs             // []*Input{Name, Type, PerModel}
//	g.Params             // []*Param{Name, Type}            (Type is per model: no leading N)
//	g.Nodes              // []*Node in a topological order (not necessarily the file's order)
//	g.Outputs            // []Operand (Kind == TensorOperand), the graph's results
//	g.WeightsPath        // absolute path of the weights file (its name, with Options.Weights), "" for init graphs
//	g.Init               // *Init{Seed} for init graphs, nil otherwise
//	g.Node(name) / g.Input(name) / g.Param(name) / g.Lookup(name) (Operand of any tensor name)
//
// Sizes that change from run to run: the batch (batch.go) and the inputs' "dynamic_dims", a
// sequence length say (dynamic.go). g.ForInputs(tensors) is g re-specialised for the sizes
// tensors carry; g.WithBatch(b) and g.WithSizes(b, graph.Sizes{"idx": {1: 20}}) name them.
//
// A Node:
//
//	n.Name, n.Op         // op is one of Ops(), e.g. "linear", "conv2d", "add", "getitem"
//	n.Inputs             // []Operand: TensorOperand{Name, Source, Type}, ScalarOperand{Scalar,
//	                     // IsInt}, NoneOperand (an optional argument left out), ListOperand{List}
//	n.Params             // map role -> *Param ("weight", "bias", "running_mean", ...); absent
//	                     // optional roles are missing from the map; n.Param(role) returns nil
//	n.Attrs              // normalised attributes (below)
//	n.Outputs            // []Type: one for a tensor-valued node, several when n.Tuple
//	n.Output()           // Outputs[0]
//
// Attributes are complete and typed after loading: every attribute of the op is present with
// PyTorch's default filled in; int-or-tuple arguments are expanded to []int of the op's spatial
// rank; negative dims are resolved against the input rank; dim lists are sorted. Read them with
// n.Attrs.Int / Float / Bool / String / Ints / IsNull (these panic only on a name the op does
// not have or a wrong accessor: a bug in the caller, never bad input). Per-op normalisations
// worth knowing:
//   - conv*, conv_transpose*: kernel_size, stride, padding, dilation (and output_padding) are
//     []int; padding "same"/"valid" are resolved to numbers: padding holds the pad before each
//     spatial dim, padding_end the pad after it (they differ only for "same" with an odd total,
//     where PyTorch puts the extra element at the end).
//   - max_pool*, avg_pool*: kernel_size, stride (default kernel_size), padding, dilation: []int.
//   - adaptive_avg_pool*: output_size []int with null entries replaced by the input size.
//   - layer_norm, rms_norm: normalized_shape []int. rms_norm eps null becomes finfo(dtype).eps.
//   - mean, sum, amax: dim is the sorted []int of reduced dims (null and [] become all dims).
//   - squeeze: dim is the sorted []int of dims actually removed.
//   - permute: dims []int non-negative; transpose dim0/dim1, softmax dim, cat/stack dim,
//     flatten start_dim/end_dim, unsqueeze dim (against the output rank), chunk/split dim,
//     getitem index: non-negative ints. view/reshape shape: the -1 is resolved.
//   - split: split_size_or_sections is always the []int of section sizes.
//   - embedding padding_idx: null or a non-negative int.
//   - multihead_attention kdim/vdim: ints (null becomes embed_dim).
//
// Weights and inputs (host memory, stacked [N, ...], as safetensors.Tensor):
//
//	t, err := g.ParamTensor("fc1.weight")   // from the weights file, or initialised (g.Init)
//	f, err := g.ParamFloat32s("fc1.weight") // same, converted to float32
//	ins, err := g.ReadInputs("inputs.safetensors") // checked against g.Inputs
//	ins, err := g.GenerateInputs(seed)             // deterministic; see docs/graph-format.md
//	g.InputTensorShape(in)                         // [N, ...] or the shared shape
//	g.IntInputBound(name)                          // bound used for generated int inputs
//
// Vocabulary and types: Ops() lists every op; DType (Float32, ..., Bool) with Size, IsFloat,
// Safetensors(); Type{Shape, DType} prints as "float32[32,64]".
//
// Hostile files: the graph, weights and inputs must be regular files (a FIFO, /dev/zero or a
// directory is refused at once, naming it); the graph file is bounded by
// Options.MaxGraphBytes, and every allocation the Graph makes (initialised weights, generated
// inputs, one tensor read) is checked against Options.MemoryLimit before it is made.
//
// graph imports nothing from the project but graph/safetensors and internal/memlimit.
package graph
