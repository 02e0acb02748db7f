package graph

type jsonType struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
}

func toJSONTypes(ts []Type) []jsonType {
	out := make([]jsonType, len(ts))
	for i, t := range ts {
		out[i] = jsonType{t.Shape, string(t.DType)}
	}
	return out
}

// Describe is the graph as `widejit graph check --json` prints it: every input, param, node
// (with its inferred output types) and output, per model.
func Describe(g *Graph) any {
	type jsonNode struct {
		Name    string         `json:"name"`
		Op      string         `json:"op"`
		Inputs  []string       `json:"inputs"`
		Params  map[string]any `json:"params,omitempty"`
		Attrs   map[string]any `json:"attrs"`
		Outputs []jsonType     `json:"outputs"`
		Tuple   bool           `json:"tuple"`
	}
	type jsonIO struct {
		Name string `json:"name"`
		jsonType
		PerModel *bool `json:"per_model,omitempty"`
	}
	doc := struct {
		File    string     `json:"file"`
		N       int        `json:"n"`
		Inputs  []jsonIO   `json:"inputs"`
		Params  []jsonIO   `json:"params"`
		Nodes   []jsonNode `json:"nodes"`
		Outputs []jsonIO   `json:"outputs"`
	}{File: g.File, N: g.N, Inputs: []jsonIO{}, Params: []jsonIO{}, Nodes: []jsonNode{}}
	for _, in := range g.Inputs {
		pm := in.PerModel
		doc.Inputs = append(doc.Inputs, jsonIO{in.Name, jsonType{in.Type.Shape, string(in.Type.DType)}, &pm})
	}
	for _, p := range g.Params {
		doc.Params = append(doc.Params, jsonIO{Name: p.Name, jsonType: jsonType{p.Type.Shape, string(p.Type.DType)}})
	}
	for _, n := range g.Nodes {
		jn := jsonNode{Name: n.Name, Op: n.Op, Inputs: []string{}, Attrs: map[string]any(n.Attrs), Outputs: toJSONTypes(n.Outputs), Tuple: n.Tuple}
		for _, in := range n.Inputs {
			jn.Inputs = append(jn.Inputs, in.String())
		}
		if len(n.Params) > 0 {
			jn.Params = map[string]any{}
			for role, p := range n.Params {
				jn.Params[role] = p.Name
			}
		}
		doc.Nodes = append(doc.Nodes, jn)
	}
	for _, o := range g.Outputs {
		doc.Outputs = append(doc.Outputs, jsonIO{Name: o.Name, jsonType: jsonType{o.Type.Shape, string(o.Type.DType)}})
	}
	return doc
}
