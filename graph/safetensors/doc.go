// Package safetensors reads and writes the safetensors tensor file format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets} (plus an optional
// "__metadata__" string map), then the tensor bytes.
//
// Open reads and checks only the header: a sane size (< 100 MB), valid JSON, known dtypes,
// offsets inside the file, tensors that tile the data area with no gap or overlap, and
// dtype size x shape == byte length. Read then fetches one tensor with ReadAt, so a large file
// is never read whole. Write produces deterministic bytes: names sorted, header padded with
// spaces to a multiple of 8 bytes.
//
// Supported dtypes: F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL. Data is little-endian;
// Float32s, Float64s, Int64s... view or convert a tensor's bytes.
package safetensors
