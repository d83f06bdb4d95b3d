#include "baton/data/readers.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "array_layout.h"
#include "baton/io/file.h"
#include "baton/io/write.h"

namespace baton {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

// What a compressed array may grow to in memory (a gzip "bomb" of zeros is refused, not read).
constexpr std::size_t kMaxDecompressedBytes = 8ull << 30;

// The whole file, decompressed when it is gzip (zlib reads plain files as they are); a regular file
// only (never a FIFO or /dev/zero, which would be read forever).
std::vector<unsigned char> read_all(const std::string& path) {
  ReadableFile regular(path, {.what = "the array file", .max_bytes = UINT64_MAX});
  gzFile file = gzdopen(regular.fd(), "rb");
  if (file == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
  regular.release();  // gzclose closes it
  std::vector<unsigned char> data;
  unsigned char buffer[1 << 16];
  while (true) {
    const int n = gzread(file, buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      fail(path, "corrupt or truncated compressed data (" + message + ")");
    }
    if (n == 0) break;
    if (data.size() + static_cast<std::size_t>(n) > kMaxDecompressedBytes) {
      gzclose(file);
      fail(path, "decompresses to more than " + human_bytes(kMaxDecompressedBytes) + "; not read");
    }
    data.insert(data.end(), buffer, buffer + n);
  }
  gzclose(file);
  return data;
}

// The tensor type of a layout's dtype.
at::ScalarType scalar_type(const std::string& dtype) {
  static const std::map<std::string, at::ScalarType> types = {
      {"bool", at::kBool}, {"uint8", at::kByte}, {"int8", at::kChar},     {"int16", at::kShort},
      {"int32", at::kInt}, {"int64", at::kLong}, {"float32", at::kFloat}, {"float64", at::kDouble}};
  return types.at(dtype);
}

// The array `parse` finds in the file's bytes, as a tensor; errors name the file.
at::Tensor read_array_with(const std::string& path, ArrayLayout (*parse)(const unsigned char*, std::size_t)) {
  const std::vector<unsigned char> data = read_all(path);
  ArrayLayout layout;
  try {
    layout = parse(data.data(), data.size());
  } catch (const std::runtime_error& e) {
    fail(path, e.what());
  }
  at::Tensor out = torch::empty(layout.shape, torch::TensorOptions().dtype(scalar_type(layout.dtype)));
  auto* dst = static_cast<unsigned char*>(out.data_ptr());
  if (layout.count > 0)
    std::memcpy(dst, data.data() + layout.offset, layout.count * layout.element);  // an empty array has no data
  if (layout.big_endian && layout.element > 1) {
    for (std::size_t i = 0; i < layout.count; ++i)
      std::reverse(dst + i * layout.element, dst + (i + 1) * layout.element);
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

at::Tensor read_idx(const std::string& path) { return read_array_with(path, parse_idx_layout); }

at::Tensor read_npy(const std::string& path) { return read_array_with(path, parse_npy_layout); }

void write_npy(const std::string& path, const at::Tensor& tensor) {
  const at::Tensor t = tensor.contiguous().cpu();
  std::string descr;
  switch (t.scalar_type()) {
    case at::kBool: descr = "|b1"; break;
    case at::kByte: descr = "|u1"; break;
    case at::kChar: descr = "|i1"; break;
    case at::kShort: descr = "<i2"; break;
    case at::kInt: descr = "<i4"; break;
    case at::kLong: descr = "<i8"; break;
    case at::kFloat: descr = "<f4"; break;
    case at::kDouble: descr = "<f8"; break;
    default: fail(path, std::string("cannot write tensors of type ") + c10::toString(t.scalar_type()) + " as .npy");
  }
  std::string shape = "(";
  for (int64_t d : t.sizes()) shape += std::to_string(d) + ",";
  if (t.dim() > 1) shape.pop_back();
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string bytes = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  write_file_atomically(path, bytes);  // a full disk leaves the file there before intact
}

at::Tensor as_float_inputs(at::Tensor raw) {
  if (raw.dim() == 3) raw = raw.unsqueeze(1);
  const bool bytes = raw.scalar_type() == at::kByte;
  raw = raw.to(torch::kFloat);
  if (bytes) raw.div_(255.0);
  return raw;
}

at::Tensor read_array(const std::string& path) { return ends_with(path, ".npy") ? read_npy(path) : read_idx(path); }

}  // namespace baton
