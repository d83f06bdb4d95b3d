// Readers for array files: IDX (the MNIST format, gzip-compressed or not) and NumPy .npy.
//
//   at::Tensor images = baton::read_idx("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
//   at::Tensor labels = baton::read_npy("labels.npy");
//
// Each returns a contiguous CPU tensor with the file's shape and element type. A missing file, a
// wrong magic number, a header that disagrees with the file's size, or an unsupported type throws
// std::runtime_error naming the file and what is wrong.
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

namespace baton {

// IDX: magic 0x0000TTDD (TT: 08 u8, 09 i8, 0B i16, 0C i32, 0D f32, 0E f64; DD: dimensions), then
// DD big-endian u32 sizes, then the data, big-endian. `.gz` files are read in place with zlib.
at::Tensor read_idx(const std::string& path);

// NumPy .npy version 1-3 as written by numpy.save: little-endian or single-byte numeric types
// (bool, u1, i1, i2, i4, i8, f4, f8), C order.
at::Tensor read_npy(const std::string& path);

// Writes a contiguous CPU tensor as .npy version 1.0 (bool, u1, i1, i2, i4, i8, f4, f8; little
// endian, C order), as numpy.save does. Throws std::runtime_error naming the path.
void write_npy(const std::string& path, const at::Tensor& tensor);

// Raw arrays as float model inputs: [N, H, W] images get a channel ([N, 1, H, W]), bytes are
// scaled to [0, 1]; other shapes and types are only converted to float.
at::Tensor as_float_inputs(at::Tensor raw);

// read_idx or read_npy by the file name (.npy, else IDX).
at::Tensor read_array(const std::string& path);

}  // namespace baton
