#!/usr/bin/env python3
"""Regenerates lowering/testdata/{conv,pool,attention,linear}/<model>_n<N>/ with
exporters/torch/export.py:

    /usr/bin/python3 lowering/testdata/make_conv_fixtures.py [NAME ...]   (from the repository root)

NAME (e.g. pool/pools) limits the run to those fixtures.

Each fixture is a graph.json, weights, inputs and the outputs of N PyTorch modules run one by
one (expected.safetensors); lowering's conv/pool/attention tests run the lowered plans against
them.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join("lowering", "testdata", "models_conv.py")

FIXTURES = {
    "conv/convs_a": ["--module", MODELS + ":ConvsA", "--input", "img=2,6,7,5"],
    "conv/convs_b": ["--module", MODELS + ":ConvsB", "--input", "img=2,6,7,5", "--input", "seq=2,6,13"],
    "conv/unbatched": ["--module", MODELS + ":ConvUnbatched", "--input", "img=5,11,9", "--input", "seq=5,13",
                       "--input", "long=3,150"],
    "conv/patches": ["--module", MODELS + ":ConvPatches", "--input", "img=2,6,19,17", "--input", "seq=2,5,14",
                     "--input", "one=6,10,9"],
    "conv/shared": ["--module", MODELS + ":ConvsA", "--input", "img=2,6,7,5", "--shared-input"],
    "conv/cnn": ["--module", MODELS + ":ConvsCNN", "--input", "img=2,3,37,31", "--input", "seq=2,5,13"],
    "conv/depthwise": ["--module", MODELS + ":ConvsDepthwise", "--input", "img=2,24,11,9", "--input", "wide=2,40,6,7",
                       "--input", "big=2,128,3,2", "--input", "seq=2,24,13"],
    "conv/depthwise_small_maps": ["--module", MODELS + ":ConvsDepthwiseSmallMaps", "--input", "tiny=2,37,2,2",
                                  "--input", "col=2,20,3,1", "--input", "seq=2,12,3"],
    "conv/grouped": ["--module", MODELS + ":ConvsGrouped", "--input", "img=2,48,11,9", "--input", "wide=2,74,5,7",
                     "--input", "small=2,80,3,3", "--input", "seq=2,16,13"],
    "conv/grouped_nonfinite": ["--module", MODELS + ":ConvsGroupedNonFinite", "--input", "img=2,48,9,11"],
    "conv/grouped_folded": ["--module", MODELS + ":ConvsGroupedFolded", "--input", "small=2,40,5,6",
                            "--input", "res=2,80,5,6", "--input", "six=2,24,6,6", "--input", "big=2,20,11,9",
                            "--input", "seq=2,12,13"],
    "conv/mobile": ["--module", MODELS + ":ConvsMobile", "--input", "img=2,12,9,7"],
    "conv/se_small_maps": ["--module", MODELS + ":ConvsScaledSmallMaps", "--input", "x=2,83,5,7", "--input", "tiny=2,45,3,3",
                           "--input", "row=2,70,1,3"],
    "conv/se": ["--module", MODELS + ":ConvsSqueezeExcite", "--input", "img=2,37,7,5", "--input", "eff=2,130,11,9",
                "--input", "mob=2,69,4,3", "--input", "wide=2,300,3,3", "--input", "big=2,8,33,32"],
    "conv/strided_shared": ["--module", MODELS + ":ConvsStridedShared", "--input", "img=2,6,9,11",
                            "--input", "img2=2,5,11,7", "--input", "img3=2,4,7,9"],
    "conv/smallmaps": ["--module", MODELS + ":ConvsSmallMaps", "--input", "img=3,24,13,11"],
    "conv/stem": ["--module", MODELS + ":ConvsStem", "--input", "img=2,3,37,44"],
    "conv/few_channels": ["--module", MODELS + ":ConvsFewChannels", "--input", "img=2,3,13,11",
                          "--input", "img2=2,2,12,9", "--input", "img3=3,1,10,10"],
    "conv/few_channels_shared": ["--module", MODELS + ":ConvsFewChannels", "--input", "img=2,3,13,11",
                                 "--input", "img2=2,2,12,9", "--input", "img3=3,1,10,10", "--shared-input"],
    "conv/phase_store": ["--module", MODELS + ":ConvsPhaseStore", "--input", "img=2,12,9,12"],
    "conv/wide_k": ["--module", MODELS + ":ConvsWideK", "--input", "img=3,115,7,6", "--input", "big=2,120,13,11"],
    "conv/row_tiles": ["--module", MODELS + ":ConvsRowTiles", "--input", "img=2,4,32,32", "--input", "odd=2,8,29,37",
                       "--input", "big=2,4,68,56"],
    "conv/wide_padding": ["--module", MODELS + ":ConvsWidePadding", "--input", "img=2,5,6,4", "--input", "seq=2,5,4"],
    "pool/pools": ["--module", MODELS + ":Pools", "--input", "img=2,5,11,9", "--input", "seq=2,5,13"],
    "conv/transposed": ["--module", MODELS + ":ConvTransposes", "--input", "img=2,6,5,7", "--input", "seq=2,6,9"],
    "conv/convs_3d": ["--module", MODELS + ":Convs3d", "--input", "vol=2,6,3,5,5"],
    "conv/nd_unbatched": ["--module", MODELS + ":ConvNDUnbatched", "--input", "vol=3,4,5,7", "--input", "img=3,5,4",
                          "--input", "seq=3,9"],
    "pool/pools_3d": ["--module", MODELS + ":Pools3d", "--input", "vol=2,3,5,7,6"],
    "attention/attention_a": ["--module", MODELS + ":AttentionA", "--input", "x=7,3,12"],
    "attention/attention_b": ["--module", MODELS + ":AttentionB", "--input", "x=7,3,12", "--input", "mem=3,9,11",
                              "--input", "kv=3,9,5"],
    "attention/long": ["--module", MODELS + ":AttentionLong", "--input", "x=70,2,8", "--input", "q=2,5,8"],
    "attention/shared": ["--module", MODELS + ":AttentionA", "--input", "x=7,3,12", "--shared-input"],
    "attention/unbatched": ["--module", MODELS + ":AttentionUnbatched", "--input", "x=7,12"],
    "linear/small_rows": ["--module", MODELS + ":SmallRowLinears", "--input", "one=1,37", "--input", "two=2,70",
                          "--input", "three=3,37", "--input", "seven=7,70", "--input", "se=2,40,1,1"],
    "linear/convnext": ["--module", MODELS + ":ConvNextBlocks", "--input", "img=2,24,3,5"],
}

# N per fixture (default 1, 3, 8): the shared-input ones at 3; the 3-d and transposed ones, whose
# volumes make larger files, at 1 and 3
NS = {"conv/cnn": (1, 3), "conv/grouped_folded": (1, 3), "conv/grouped_nonfinite": (3,), "conv/se": (1, 3), "conv/se_small_maps": (1, 3), "linear/small_rows": (1, 3), "linear/convnext": (1, 3), "conv/depthwise": (1, 3), "conv/depthwise_small_maps": (1, 3), "conv/grouped": (1, 3), "conv/mobile": (1, 3), "conv/strided_shared": (1, 3), "conv/smallmaps": (1, 3), "conv/stem": (1, 3), "conv/phase_store": (1, 3), "conv/few_channels": (1, 3), "conv/few_channels_shared": (3,), "conv/wide_k": (1, 3), "conv/wide_padding": (1, 3), "conv/row_tiles": (1, 3), "conv/shared": (3,), "attention/shared": (3,), "conv/transposed": (1, 3), "conv/convs_3d": (1, 3),
      "conv/nd_unbatched": (1, 3), "pool/pools_3d": (1, 3)}


def main():
    only = set(sys.argv[1:])
    for name, args in FIXTURES.items():
        if only and name not in only:
            continue
        for n in NS.get(name, (1, 3, 8)):
            out = os.path.join(HERE, "%s_n%d" % (name, n))
            cmd = [sys.executable, os.path.join(ROOT, "exporters", "torch", "export.py")] + args + \
                ["--n", str(n), "--seed", "3", "--out", out]
            print(" ".join(cmd[1:]), flush=True)
            subprocess.run(cmd, cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
