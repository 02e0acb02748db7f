"""The PyTorch exporter of exporters/torch (export.py, reference.py, safetensors_io.py), shipped
inside the widejit package: in a checkout these files are symbolic links to exporters/torch, and
`pip install ./python` copies them."""
