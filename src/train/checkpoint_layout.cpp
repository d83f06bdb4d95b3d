#include "checkpoint_layout.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>

#include <algorithm>
#include <cstring>
#include <map>

namespace baton {
namespace {

template <typename T>
T get(const std::string& bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

// The checksum of `length` bytes from `offset`, read a piece at a time.
uint32_t crc_of(const ReadAt& read, std::size_t offset, std::size_t length) {
  std::string piece(std::min<std::size_t>(length, 16u << 20), '\0');
  uint32_t crc = 0;
  for (std::size_t done = 0; done < length;) {
    const std::size_t n = std::min(piece.size(), length - done);
    read(offset + done, n, piece.data());
    crc = checkpoint_crc(piece.data(), n, crc);
    done += n;
  }
  return crc;
}

// A size in a tensor's description: a whole number JSON holds as one, from 0 to 2^62 (a float, a
// string or a negative number is a corrupt description; converting it would be undefined).
uint64_t size_field(const nlohmann::json& v, const std::string& name, const std::string& tensor) {
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (!whole || v.get<uint64_t>() > (uint64_t{1} << 62)) {
    checkpoint_fail(name, "corrupt: tensor '" + tensor + "' has a size that is not a whole number: " + v.dump());
  }
  return v.get<uint64_t>();
}

}  // namespace

std::size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"bool", 1},  {"uint8", 1},   {"int8", 1},     {"int16", 2},   {"int32", 4},
      {"int64", 8}, {"float16", 2}, {"bfloat16", 2}, {"float32", 4}, {"float64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

uint32_t checkpoint_crc(const char* data, std::size_t size, uint32_t crc_so_far) {
  uLong crc = crc_so_far;
  while (size > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk, size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

void read_exactly(int fd, std::size_t offset, std::size_t n, char* out, const std::string& name) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) checkpoint_fail(name, "cannot be read");
    const auto read = static_cast<std::size_t>(got);
    offset += read, out += read, n -= read;
  }
}

CheckpointLayout parse_checkpoint_layout(const std::string& bytes, const std::string& name) {
  return parse_checkpoint_layout(
      bytes.size(), [&](std::size_t offset, std::size_t n, char* out) { std::memcpy(out, bytes.data() + offset, n); },
      name);
}

CheckpointLayout parse_checkpoint_layout(std::size_t size, const ReadAt& read, const std::string& name) {
  if (size == 0) checkpoint_fail(name, "the file is empty");
  std::string bytes(std::min(size, kCheckpointHeader + 4), '\0');  // the header and the metadata's length
  read(0, bytes.size(), bytes.data());
  if (size < kCheckpointHeader || std::memcmp(bytes.data(), kCheckpointMagic, sizeof kCheckpointMagic) != 0) {
    checkpoint_fail(name, "not a baton checkpoint (no BATONCK header)");
  }
  const auto version = get<uint32_t>(bytes, 8);
  if (version != kCheckpointFormatVersion) {
    checkpoint_fail(name, "checkpoint format version " + std::to_string(version) + " (this baton reads version " +
                              std::to_string(kCheckpointFormatVersion) + ")");
  }
  const auto crc = get<uint32_t>(bytes, 12);
  const auto length = get<uint64_t>(bytes, 16);
  if (size - kCheckpointHeader != length) {
    checkpoint_fail(name, "truncated or padded: the header says " + std::to_string(length + kCheckpointHeader) +
                              " bytes, the file has " + std::to_string(size));
  }
  if (crc_of(read, kCheckpointHeader, length) != crc) {
    checkpoint_fail(name, "corrupt: the checksum does not match the contents");
  }
  if (length < 4) checkpoint_fail(name, "corrupt: no metadata");
  const auto meta_len = get<uint32_t>(bytes, kCheckpointHeader);
  if (meta_len > length - 4) checkpoint_fail(name, "corrupt: the metadata runs past the end");
  CheckpointLayout out;
  std::string meta_text(meta_len, '\0');
  read(kCheckpointHeader + 4, meta_len, meta_text.data());
  try {
    out.meta = nlohmann::json::parse(meta_text);
  } catch (const nlohmann::json::exception&) {
    checkpoint_fail(name, "corrupt: the metadata is not JSON");
  }
  if (!out.meta.is_object() || !out.meta.contains("tensors") || !out.meta["tensors"].is_array()) {
    checkpoint_fail(name, "corrupt: the metadata lists no tensors");
  }
  out.data_start = kCheckpointHeader + 4 + meta_len;
  const std::size_t data_size = size - out.data_start;
  try {
    for (const auto& t : out.meta["tensors"]) {
      TensorEntry e;
      e.name = t.at("name").get<std::string>();
      e.dtype = t.at("dtype").get<std::string>();
      const nlohmann::json& shape = t.at("shape");
      if (!shape.is_array()) checkpoint_fail(name, "corrupt: tensor '" + e.name + "' has no shape");
      for (const auto& d : shape) e.shape.push_back(static_cast<int64_t>(size_field(d, name, e.name)));
      e.offset = size_field(t.at("offset"), name, e.name);
      e.nbytes = size_field(t.at("nbytes"), name, e.name);
      const std::size_t element = dtype_size(e.dtype);
      if (element == 0) checkpoint_fail(name, "tensor '" + e.name + "' has an unknown dtype '" + e.dtype + "'");
      uint64_t numel = 1;
      for (int64_t d : e.shape) {
        if (d < 0 || (d > 0 && numel > (uint64_t{1} << 40) / static_cast<uint64_t>(d))) {
          checkpoint_fail(name, "tensor '" + e.name + "' has a bad shape");
        }
        numel *= static_cast<uint64_t>(d);
      }
      if (numel * element != e.nbytes || e.offset > data_size || e.nbytes > data_size - e.offset) {
        checkpoint_fail(name, "corrupt: tensor '" + e.name + "' does not fit its bytes");
      }
      out.tensors.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception&) {
    checkpoint_fail(name, "corrupt: a tensor's description is malformed");
  }
  return out;
}

}  // namespace baton
