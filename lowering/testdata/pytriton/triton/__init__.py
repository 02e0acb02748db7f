"""A tiny numpy stand-in for Triton, for tests only.

It runs the kernels widejit renders (a small subset of triton.language) program by program on
numpy arrays, with bounds checks on every unmasked lane, so rendered kernels and plans can be
checked against PyTorch on machines without Triton or a GPU. It is not Triton: no compilation,
no parallelism, and tl.rand is a stand-in (not Philox).
"""

from . import language  # noqa: F401


class JITFunction:
    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def __call__(self, *args, **kwargs):  # a helper called from a kernel
        return self.fn(*args, **kwargs)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            run(self, grid, args, kwargs)
        return launch


def jit(fn=None, **_):
    if fn is None:
        return lambda f: JITFunction(f)
    return JITFunction(fn)


def run(kernel, grid, args, consts):
    grid = tuple(grid) + (1,) * (3 - len(grid))
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                language._pid = (x, y, z)
                language._nprog = grid
                kernel.fn(*args, **consts)


def cdiv(a, b):
    return (a + b - 1) // b
