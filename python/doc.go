// Package python holds the widejit Python package (widejit/: export, run, pack, unpack; its
// pyproject.toml makes `pip install ./python` work) and the Go tests that run its unittest suite
// against PyTorch and the widejit binary, and install it with pip. See README.md in this folder.
package python
