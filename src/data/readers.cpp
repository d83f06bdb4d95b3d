#include "baton/data/readers.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace baton {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

// The whole file, decompressed when it is gzip (zlib reads plain files as they are).
std::vector<unsigned char> read_all(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
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
    data.insert(data.end(), buffer, buffer + n);
  }
  gzclose(file);
  return data;
}

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

at::Tensor read_idx(const std::string& path) {
  const std::vector<unsigned char> data = read_all(path);
  if (data.size() < 4) fail(path, "too short for an IDX file (" + std::to_string(data.size()) + " bytes)");
  if (data[0] != 0 || data[1] != 0) fail(path, "not an IDX file (the magic number must start with two zero bytes)");
  at::ScalarType type;
  std::size_t element = 0;
  switch (data[2]) {
    case 0x08: type = at::kByte, element = 1; break;
    case 0x09: type = at::kChar, element = 1; break;
    case 0x0B: type = at::kShort, element = 2; break;
    case 0x0C: type = at::kInt, element = 4; break;
    case 0x0D: type = at::kFloat, element = 4; break;
    case 0x0E: type = at::kDouble, element = 8; break;
    default:
      fail(path, "unknown IDX element type 0x" + std::to_string(data[2]) + " (expected 08, 09, 0B, 0C, 0D or 0E)");
  }
  const std::size_t dims = data[3];
  if (dims == 0) fail(path, "IDX header says 0 dimensions");
  const std::size_t header = 4 + 4 * dims;
  if (data.size() < header) fail(path, "truncated IDX header (" + std::to_string(dims) + " dimensions declared)");
  std::vector<int64_t> shape;
  std::size_t count = 1;
  for (std::size_t d = 0; d < dims; ++d) {
    shape.push_back(big_endian_u32(&data[4 + 4 * d]));
    count *= static_cast<std::size_t>(shape.back());
  }
  const std::size_t expected = header + count * element;
  if (data.size() != expected) {
    fail(path, "IDX header declares " + c10::str(at::IntArrayRef(shape)) + " (" + std::to_string(expected) +
                   " bytes) but the file has " + std::to_string(data.size()) + " bytes");
  }
  at::Tensor out = torch::empty(shape, torch::TensorOptions().dtype(type));
  auto* dst = static_cast<unsigned char*>(out.data_ptr());
  std::memcpy(dst, data.data() + header, count * element);
  if (element > 1) {  // IDX is big-endian
    for (std::size_t i = 0; i < count; ++i) std::reverse(dst + i * element, dst + (i + 1) * element);
  }
  return out;
}

at::Tensor read_npy(const std::string& path) {
  const std::vector<unsigned char> data = read_all(path);
  static const unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (data.size() < 10 || std::memcmp(data.data(), kMagic, 6) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = data[6];
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_len = data[8] | (std::size_t{data[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) fail(path, "truncated .npy header");
    header_len = data[8] | (std::size_t{data[9]} << 8) | (std::size_t{data[10]} << 16) | (std::size_t{data[11]} << 24);
    offset = 12;
  } else {
    fail(path, ".npy format version " + std::to_string(major) + " is not supported (1, 2 or 3)");
  }
  if (data.size() < offset + header_len) fail(path, "truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(data.data() + offset), header_len);
  auto field = [&](const std::string& key) {
    const auto at = header.find("'" + key + "'");
    if (at == std::string::npos) fail(path, ".npy header has no '" + key + "': " + header);
    auto colon = header.find(':', at);
    auto start = header.find_first_not_of(' ', colon + 1);
    return header.substr(start);
  };
  std::string descr = field("descr");
  descr = descr.substr(1, descr.find('\'', 1) - 1);
  if (field("fortran_order").rfind("True", 0) == 0)
    fail(path, "Fortran-order arrays are not supported; save with C order");
  std::string shape_text = field("shape");
  shape_text = shape_text.substr(1, shape_text.find(')') - 1);
  std::vector<int64_t> shape;
  for (std::size_t pos = 0; pos < shape_text.size();) {
    const auto comma = shape_text.find(',', pos);
    std::string part = shape_text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    part.erase(0, part.find_first_not_of(' '));
    if (!part.empty()) {
      try {
        shape.push_back(std::stoll(part));
      } catch (const std::exception&) {
        fail(path, "bad shape in .npy header: " + shape_text);
      }
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (descr.size() < 3) fail(path, "unsupported dtype '" + descr + "'");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  at::ScalarType type;
  if (kind == "b1")
    type = at::kBool;
  else if (kind == "u1")
    type = at::kByte;
  else if (kind == "i1")
    type = at::kChar;
  else if (kind == "i2")
    type = at::kShort;
  else if (kind == "i4")
    type = at::kInt;
  else if (kind == "i8")
    type = at::kLong;
  else if (kind == "f4")
    type = at::kFloat;
  else if (kind == "f8")
    type = at::kDouble;
  else
    fail(path, "unsupported dtype '" + descr + "' (expected bool, u1, i1, i2, i4, i8, f4 or f8)");
  const std::size_t element = c10::elementSize(type);
  if (element > 1 && order != '<') fail(path, "big-endian dtype '" + descr + "' is not supported");
  std::size_t count = 1;
  for (int64_t d : shape) count *= static_cast<std::size_t>(d);
  const std::size_t start = offset + header_len;
  if (data.size() != start + count * element) {
    fail(path, ".npy header declares shape (" + shape_text + ") of " + descr + " (" + std::to_string(count * element) +
                   " bytes) but the file has " + std::to_string(data.size() - start) + " bytes of data");
  }
  at::Tensor out = torch::empty(shape, torch::TensorOptions().dtype(type));
  std::memcpy(out.data_ptr(), data.data() + start, count * element);
  return out;
}

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
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, std::string("cannot write: ") + std::strerror(errno));
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, sizeof magic);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out << header;
  out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  if (!out) fail(path, "write failed");
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
