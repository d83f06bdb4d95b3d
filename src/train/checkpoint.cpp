#include "baton/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <torch/torch.h>

#include "sha256.h"

namespace baton {
namespace {

constexpr char kMagic[8] = {'B', 'A', 'T', 'O', 'N', 'C', 'K', '\0'};
constexpr std::size_t kHeader = 24;

const std::map<std::string, at::ScalarType>& dtypes() {
  static const std::map<std::string, at::ScalarType> types = {
      {"bool", at::kBool},     {"uint8", at::kByte},    {"int8", at::kChar},    {"int16", at::kShort},
      {"int32", at::kInt},     {"int64", at::kLong},    {"float16", at::kHalf}, {"bfloat16", at::kBFloat16},
      {"float32", at::kFloat}, {"float64", at::kDouble}};
  return types;
}

std::string dtype_name(at::ScalarType type, const std::string& tensor) {
  for (const auto& [name, t] : dtypes()) {
    if (t == type) return name;
  }
  throw CheckpointError("tensor '" + tensor + "' has a type a checkpoint cannot hold: " + c10::toString(type));
}

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T get(const std::string& bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

[[noreturn]] void fail(const std::string& name, const std::string& why) { throw CheckpointError(name + ": " + why); }

uint32_t crc_of(const char* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk, size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string encode_checkpoint(const StateDict& state, const nlohmann::json& meta) {
  nlohmann::json tensors = nlohmann::json::array();
  std::string data;
  for (const auto& [name, tensor] : state.tensors) {
    const at::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    const auto nbytes = static_cast<std::size_t>(t.nbytes());
    tensors.push_back({{"name", name},
                       {"dtype", dtype_name(t.scalar_type(), name)},
                       {"shape", t.sizes().vec()},
                       {"offset", data.size()},
                       {"nbytes", nbytes}});
    data.append(static_cast<const char*>(t.data_ptr()), nbytes);
  }
  nlohmann::json head = meta;
  head["values"] = state.values;
  head["tensors"] = tensors;
  const std::string meta_text = head.dump();

  std::string body;
  put<uint32_t>(body, static_cast<uint32_t>(meta_text.size()));
  body += meta_text;
  body += data;
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, kCheckpointFormatVersion);
  put<uint32_t>(out, crc_of(body.data(), body.size()));
  put<uint64_t>(out, body.size());
  out += body;
  return out;
}

CheckpointFile decode_checkpoint(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) fail(name, "the file is empty");
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    fail(name, "not a baton checkpoint (no BATONCK header)");
  }
  const auto version = get<uint32_t>(bytes, 8);
  if (version != kCheckpointFormatVersion) {
    fail(name, "checkpoint format version " + std::to_string(version) + " (this baton reads version " +
                   std::to_string(kCheckpointFormatVersion) + ")");
  }
  const auto crc = get<uint32_t>(bytes, 12);
  const auto length = get<uint64_t>(bytes, 16);
  if (bytes.size() - kHeader != length) {
    fail(name, "truncated or padded: the header says " + std::to_string(length + kHeader) + " bytes, the file has " +
                   std::to_string(bytes.size()));
  }
  if (crc_of(bytes.data() + kHeader, length) != crc) fail(name, "corrupt: the checksum does not match the contents");
  if (length < 4) fail(name, "corrupt: no metadata");
  const auto meta_len = get<uint32_t>(bytes, kHeader);
  if (meta_len > length - 4) fail(name, "corrupt: the metadata runs past the end");
  CheckpointFile out;
  try {
    out.meta = nlohmann::json::parse(bytes.substr(kHeader + 4, meta_len));
  } catch (const nlohmann::json::exception&) {
    fail(name, "corrupt: the metadata is not JSON");
  }
  if (!out.meta.is_object() || !out.meta.contains("tensors") || !out.meta["tensors"].is_array()) {
    fail(name, "corrupt: the metadata lists no tensors");
  }
  const std::size_t data_start = kHeader + 4 + meta_len;
  const std::size_t data_size = bytes.size() - data_start;
  try {
    for (const auto& t : out.meta["tensors"]) {
      const std::string tname = t.at("name").get<std::string>();
      const auto type = dtypes().find(t.at("dtype").get<std::string>());
      if (type == dtypes().end()) fail(name, "tensor '" + tname + "' has an unknown dtype");
      const auto shape = t.at("shape").get<std::vector<int64_t>>();
      const auto offset = t.at("offset").get<std::size_t>();
      const auto nbytes = t.at("nbytes").get<std::size_t>();
      int64_t numel = 1;
      for (int64_t d : shape) {
        if (d < 0 || (d > 0 && numel > (int64_t{1} << 40) / d)) fail(name, "tensor '" + tname + "' has a bad shape");
        numel *= d;
      }
      if (static_cast<std::size_t>(numel) * c10::elementSize(type->second) != nbytes || offset > data_size ||
          nbytes > data_size - offset) {
        fail(name, "corrupt: tensor '" + tname + "' does not fit its bytes");
      }
      at::Tensor tensor = torch::empty(shape, torch::TensorOptions().dtype(type->second));
      std::memcpy(tensor.data_ptr(), bytes.data() + data_start + offset, nbytes);
      out.state.tensors[tname] = tensor;
    }
  } catch (const nlohmann::json::exception&) {
    fail(name, "corrupt: a tensor's description is malformed");
  }
  out.tensors = out.meta["tensors"];
  out.state.values = out.meta.value("values", nlohmann::json::object());
  out.meta.erase("tensors");
  out.meta.erase("values");
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, std::string("cannot write in ") + dir.string() + " (" + std::strerror(errno) + ")");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, "write failed (" + why + ")");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail(path, std::string("cannot flush to disk (") + std::strerror(errno) + ")");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    fail(path, "cannot rename into place (" + why + ")");
  }
  fsync_path(dir.string(), O_RDONLY | O_DIRECTORY);
}

void write_checkpoint(const std::string& path, const StateDict& state, const nlohmann::json& meta) {
  write_file_atomically(path, encode_checkpoint(state, meta));
}

CheckpointFile read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return decode_checkpoint(buffer.str(), path);
}

std::string sha256_hex(const std::string& bytes) {
  Sha256 sha;
  sha.update(bytes.data(), bytes.size());
  return sha.hex();
}

std::string weights_sha256(const StateDict& state) {
  Sha256 sha;
  for (const auto& [name, tensor] : state.tensors) {  // std::map: name order
    if (name.rfind("model/", 0) != 0) continue;
    const at::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    sha.update(name.data(), name.size());
    sha.update(t.data_ptr(), static_cast<std::size_t>(t.nbytes()));
  }
  return sha.hex();
}

}  // namespace baton
