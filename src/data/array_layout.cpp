#include "array_layout.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace baton {
namespace {

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The number of elements; a failure when the shape is negative or its bytes (after `offset`) do not
// fit in a size_t (a header written wrong, or made to overflow).
std::size_t element_count(const std::vector<int64_t>& shape, std::size_t element, std::size_t offset) {
  std::size_t count = 1;
  std::size_t bytes = 0;
  for (int64_t d : shape) {
    if (d < 0) fail("a negative dimension in the shape " + shape_text(shape));
    if (__builtin_mul_overflow(count, static_cast<std::size_t>(d), &count)) {
      fail("the shape " + shape_text(shape) + " is too large");
    }
  }
  if (__builtin_mul_overflow(count, element, &bytes) || __builtin_add_overflow(bytes, offset, &bytes)) {
    fail("the shape " + shape_text(shape) + " is too large");
  }
  return count;
}

// The header text of a .npy file; `data_offset` is where the array's bytes start.
std::string npy_header(const unsigned char* data, std::size_t size, std::size_t& data_offset) {
  static const unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0) fail("not a .npy file (bad magic)");
  const int major = data[6];
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_len = data[8] | (std::size_t{data[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail("truncated .npy header");
    header_len = data[8] | (std::size_t{data[9]} << 8) | (std::size_t{data[10]} << 16) | (std::size_t{data[11]} << 24);
    offset = 12;
  } else {
    fail(".npy format version " + std::to_string(major) + " is not supported (1, 2 or 3)");
  }
  if (size - offset < header_len) fail("truncated .npy header");
  data_offset = offset + header_len;
  return std::string(reinterpret_cast<const char*>(data + offset), header_len);
}

// The header's text after "'key':", up to its end.
std::string npy_field(const std::string& header, const std::string& key) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(".npy header has no '" + key + "'");
  const auto colon = header.find(':', at);
  const auto start = colon == std::string::npos ? std::string::npos : header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) fail(".npy header has no value for '" + key + "'");
  return header.substr(start);
}

// "3, 28, 28" (the inside of the shape tuple) as dimensions.
std::vector<int64_t> npy_shape(const std::string& shape) {
  std::vector<int64_t> dims;
  for (std::size_t pos = 0; pos < shape.size();) {
    const auto comma = shape.find(',', pos);
    std::string part = shape.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (!part.empty()) {
      std::size_t used = 0;
      long long d = 0;
      try {
        d = std::stoll(part, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != part.size()) fail("bad shape in .npy header: (" + shape + ")");
      dims.push_back(d);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return dims;
}

// The dtype and element size of a descr such as "<f4" (little-endian unless one byte).
void set_npy_dtype(const std::string& descr, ArrayLayout& layout) {
  static const std::vector<std::pair<std::string, std::pair<const char*, std::size_t>>> kTypes = {
      {"b1", {"bool", 1}},  {"u1", {"uint8", 1}}, {"i1", {"int8", 1}},    {"i2", {"int16", 2}},
      {"i4", {"int32", 4}}, {"i8", {"int64", 8}}, {"f4", {"float32", 4}}, {"f8", {"float64", 8}}};
  if (descr.size() < 3) fail("unsupported dtype '" + descr + "'");
  for (const auto& [kind, type] : kTypes) {
    if (descr.substr(1) == kind) layout.dtype = type.first, layout.element = type.second;
  }
  if (layout.dtype.empty()) fail("unsupported dtype '" + descr + "' (expected bool, u1, i1, i2, i4, i8, f4 or f8)");
  if (layout.element > 1 && descr[0] != '<') fail("big-endian dtype '" + descr + "' is not supported");
}

}  // namespace

ArrayLayout parse_idx_layout(const unsigned char* data, std::size_t size) {
  if (size < 4) fail("too short for an IDX file (" + std::to_string(size) + " bytes)");
  if (data[0] != 0 || data[1] != 0) fail("not an IDX file (the magic number must start with two zero bytes)");
  ArrayLayout layout;
  switch (data[2]) {
    case 0x08: layout.dtype = "uint8", layout.element = 1; break;
    case 0x09: layout.dtype = "int8", layout.element = 1; break;
    case 0x0B: layout.dtype = "int16", layout.element = 2; break;
    case 0x0C: layout.dtype = "int32", layout.element = 4; break;
    case 0x0D: layout.dtype = "float32", layout.element = 4; break;
    case 0x0E: layout.dtype = "float64", layout.element = 8; break;
    default: fail("unknown IDX element type 0x" + std::to_string(data[2]) + " (expected 08, 09, 0B, 0C, 0D or 0E)");
  }
  const std::size_t dims = data[3];
  if (dims == 0) fail("IDX header says 0 dimensions");
  layout.offset = 4 + 4 * dims;
  if (size < layout.offset) fail("truncated IDX header (" + std::to_string(dims) + " dimensions declared)");
  for (std::size_t d = 0; d < dims; ++d) layout.shape.push_back(big_endian_u32(&data[4 + 4 * d]));
  layout.count = element_count(layout.shape, layout.element, layout.offset);
  if (size != layout.offset + layout.count * layout.element) {
    fail("IDX header declares " + shape_text(layout.shape) + " (" +
         std::to_string(layout.offset + layout.count * layout.element) + " bytes) but the file has " +
         std::to_string(size) + " bytes");
  }
  layout.big_endian = true;
  return layout;
}

ArrayLayout parse_npy_layout(const unsigned char* data, std::size_t size) {
  ArrayLayout layout;
  const std::string header = npy_header(data, size, layout.offset);
  std::string descr = npy_field(header, "descr");
  const auto quote = descr.find('\'', 1);
  if (descr.empty() || descr[0] != '\'' || quote == std::string::npos)
    fail(".npy header: descr is not a quoted string");
  descr = descr.substr(1, quote - 1);
  if (npy_field(header, "fortran_order").rfind("True", 0) == 0) {
    fail("Fortran-order arrays are not supported; save with C order");
  }
  std::string shape = npy_field(header, "shape");
  const auto close = shape.find(')');
  if (shape.empty() || shape[0] != '(' || close == std::string::npos) fail(".npy header: shape is not a tuple");
  shape = shape.substr(1, close - 1);
  layout.shape = npy_shape(shape);
  set_npy_dtype(descr, layout);
  layout.count = element_count(layout.shape, layout.element, layout.offset);
  if (size != layout.offset + layout.count * layout.element) {
    fail(".npy header declares shape (" + shape + ") of " + descr + " (" +
         std::to_string(layout.count * layout.element) + " bytes) but the file has " +
         std::to_string(size - layout.offset) + " bytes of data");
  }
  return layout;
}

}  // namespace baton
