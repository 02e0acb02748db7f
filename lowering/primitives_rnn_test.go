package lowering

import (
	"testing"
)

// nn.RNN (tanh, relu), nn.GRU and nn.LSTM against PyTorch fixtures (testdata/rnn, regenerated
// by /usr/bin/python3 lowering/testdata/make_rnn_fixtures.py; the layers are listed in
// testdata/models_rnn.py): 1 and 2 layers, bidirectional, batch_first both ways (through a
// strided transpose), given and zero initial states, bias=False, an unbatched sequence, every
// output (out, h_n, c_n). Every plan variant (fused, unfused, sequential, model-major, CPU
// tiles) at N=3, the default at N=1; fp32 within 1e-5 + 1e-4*max|want|.
func TestRecurrentFixtures(t *testing.T) { checkFamilyFixtures(t, "rnn") }
