// Command bench runs the zoo benchmark (issue #4): the zoo's models (bench/zoo/*.json) at
// several N on the CPU, timed in one run, interleaved repetition by repetition:
//
//   - widejit wide: one plan whose kernels serve all N models (compile time reported apart);
//   - widejit sequential: the `--mode sequential` plan, the N models one after another;
//   - PyTorch (bench/peers/torch_zoo.py, Debian's /usr/bin/python3): N modules called in a
//     loop, and batched strategies (stacked weights with bmm/baddbmm/einsum, grouped
//     convolutions), each checked against the loop before it is timed, each at the full thread
//     count and at one thread (the faster is reported); the peer also checks widejit's outputs
//     against its loop on the same weights and inputs.
//
// It writes zoo.md (a Markdown table), zoo.json and zoo.png (a bar chart) to --out; --real
// runs the real-models section instead (real.go: torchvision CNNs, a GPT-style LM and a ViT
// exported at run time), written to real.md, real.json and real.png; --real --extra runs it on
// the families' other members (resnet34/50, regnet_x_400mf, ..., a wider GPT), written to
// real_extra.*.
//
//	go run ./bench [--n 1,8,32,100] [--models mlp,deep_mlp,resblock,convnet] [--reps 15] [--out bench/results]
package main
