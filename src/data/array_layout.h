// Where an IDX or .npy array lies in its bytes, parsed and checked without LibTorch (so that the
// parsers can be fuzzed on their own). Private to src/data; readers.cpp builds tensors from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace baton {

struct ArrayLayout {
  std::string dtype;        // "bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"
  std::size_t element = 0;  // bytes per element
  std::vector<int64_t> shape;
  std::size_t offset = 0;  // of the first element
  std::size_t count = 0;   // elements; offset + count * element is the size of the bytes
  bool big_endian = false;
};

// Throw std::runtime_error with the reason (no file name) for anything but a whole, consistent
// array: a returned layout's data lies inside the bytes, and its shape's product is `count`.
ArrayLayout parse_idx_layout(const unsigned char* data, std::size_t size);
ArrayLayout parse_npy_layout(const unsigned char* data, std::size_t size);

}  // namespace baton
