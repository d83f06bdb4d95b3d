#include "baton/train/checkpoint.h"

#include "baton/io/write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <openssl/evp.h>
#include <torch/torch.h>

#include "baton/io/file.h"
#include "checkpoint_layout.h"
#include "train/sharded_checkpoint.h"

namespace baton {
namespace {

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

// A write that failed (a full disk, an I/O error): the run failed, not the file it was given.

}  // namespace

namespace {

// A checkpoint file as the pieces it is made of: its header, its metadata, and each tensor's bytes
// where the tensor holds them (a host copy only of what is elsewhere or not contiguous).
class Encoded {
 public:
  Encoded(const StateDict& state, const nlohmann::json& meta) {
    nlohmann::json tensors = nlohmann::json::array();
    std::size_t offset = 0;
    for (const auto& [name, tensor] : state.tensors) {
      const at::Tensor& t = held_.emplace_back(tensor.detach().to(torch::kCPU).contiguous());
      const auto nbytes = static_cast<std::size_t>(t.nbytes());
      tensors.push_back({{"name", name},
                         {"dtype", dtype_name(t.scalar_type(), name)},
                         {"shape", t.sizes().vec()},
                         {"offset", offset},
                         {"nbytes", nbytes}});
      offset += nbytes;
    }
    nlohmann::json head = meta;
    head["values"] = state.values;
    head["tensors"] = tensors;
    put<uint32_t>(meta_, 0);
    meta_ += head.dump();
    const auto meta_length = static_cast<uint32_t>(meta_.size() - sizeof(uint32_t));
    std::memcpy(meta_.data(), &meta_length, sizeof meta_length);
    uint32_t crc = checkpoint_crc(meta_.data(), meta_.size());
    for (const auto& t : held_) crc = checkpoint_crc(static_cast<const char*>(t.data_ptr()), t.nbytes(), crc);
    header_.assign(kCheckpointMagic, sizeof kCheckpointMagic);
    put<uint32_t>(header_, kCheckpointFormatVersion);
    put<uint32_t>(header_, crc);
    put<uint64_t>(header_, meta_.size() + offset);
  }
  std::vector<std::string_view> pieces() const {
    std::vector<std::string_view> out{header_, meta_};
    for (const auto& t : held_) out.emplace_back(static_cast<const char*>(t.data_ptr()), t.nbytes());
    return out;
  }

 private:
  std::vector<at::Tensor> held_;
  std::string header_, meta_;
};

}  // namespace

std::string encode_checkpoint(const StateDict& state, const nlohmann::json& meta) {
  const Encoded encoded(state, meta);
  std::string out;
  for (const std::string_view piece : encoded.pieces()) out.append(piece);
  return out;
}

namespace {

// The checkpoint a layout describes, each tensor's bytes read into its own memory through `read`.
template <typename Read>
CheckpointFile from_layout(CheckpointLayout layout, const Read& read) {
  CheckpointFile out;
  for (const TensorEntry& e : layout.tensors) {
    at::Tensor tensor = torch::empty(e.shape, torch::TensorOptions().dtype(dtypes().at(e.dtype)));
    read(layout.data_start + e.offset, e.nbytes, static_cast<char*>(tensor.data_ptr()));
    out.state.tensors[e.name] = tensor;
  }
  out.tensors = layout.meta["tensors"];
  out.state.values = layout.meta.value("values", nlohmann::json::object());
  out.meta = std::move(layout.meta);
  out.meta.erase("tensors");
  out.meta.erase("values");
  return out;
}

}  // namespace

CheckpointFile decode_checkpoint(const std::string& bytes, const std::string& name) {
  return from_layout(parse_checkpoint_layout(bytes, name),
                     [&](std::size_t offset, std::size_t n, char* out) { std::memcpy(out, bytes.data() + offset, n); });
}

void write_checkpoint(const std::string& path, const StateDict& state, const nlohmann::json& meta) {
  write_file_atomically(path, Encoded(state, meta).pieces());  // never the whole file in memory
}

CheckpointFile read_checkpoint(const std::string& path) { return detail::read_checkpoint(path, true, nullptr); }

namespace detail {

namespace {

// The file's layout (its checksum checked) and a way to read its bytes; `with` runs with both.
template <typename With>
void with_layout(const std::string& path, With with) {
  try {
    const ReadableFile file(path, {.what = "a checkpoint", .max_bytes = 1ull << 40});
    const auto read = [&](std::size_t offset, std::size_t n, char* out) {
      read_exactly(file.fd(), offset, n, out, path);
    };
    with(parse_checkpoint_layout(file.size(), read, path), read);
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  }
}

}  // namespace

nlohmann::json checked_checkpoint_values(const std::string& path) {
  nlohmann::json values;
  with_layout(path, [&](const CheckpointLayout& layout, const auto&) {
    values = layout.meta.value("values", nlohmann::json::object());
  });
  if (values.contains(kShardedStateKey)) {
    try {
      ShardedCheckpoint(path, values.at(kShardedStateKey));
    } catch (const nlohmann::json::exception&) {
      throw CheckpointError(path + ": its sharded state's layout is not what baton writes");
    }
  }
  return values;
}

// Each tensor read from the file into its own memory (the file never whole in memory).
CheckpointFile read_checkpoint(const std::string& path, bool state, std::shared_ptr<ShardedCheckpoint>* shards) {
  CheckpointFile ckpt;
  with_layout(path, [&](CheckpointLayout layout, const auto& read) { ckpt = from_layout(std::move(layout), read); });
  if (ckpt.state.values.contains(kShardedStateKey)) {  // save_format: sharded
    try {
      auto joined = join_shards(path, ckpt, state);
      if (shards != nullptr) *shards = std::move(joined);
    } catch (const nlohmann::json::exception&) {
      throw CheckpointError(path + ": its sharded state's layout is not what baton writes");
    }
  }
  return ckpt;
}

}  // namespace detail

nlohmann::json read_checkpoint_meta(const std::string& path) {
  try {
    ReadableFile file(path, {.what = "a checkpoint", .max_bytes = 1ull << 40});
    std::string head(kCheckpointHeader + 4, '\0');
    if (::pread(file.fd(), head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()) ||
        head.compare(0, sizeof kCheckpointMagic, kCheckpointMagic, sizeof kCheckpointMagic) != 0) {
      checkpoint_fail(path, "not a baton checkpoint (no BATONCK header)");
    }
    uint32_t length = 0;
    std::memcpy(&length, head.data() + kCheckpointHeader, sizeof length);
    if (kCheckpointHeader + 4 + uint64_t{length} > file.size()) checkpoint_fail(path, "truncated metadata");
    std::string text(length, '\0');
    if (::pread(file.fd(), text.data(), length, static_cast<off_t>(head.size())) != static_cast<ssize_t>(length)) {
      checkpoint_fail(path, "cannot read its metadata");
    }
    nlohmann::json meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!meta.is_object()) checkpoint_fail(path, "its metadata is not a JSON object");
    meta.erase("tensors");
    meta.erase("values");
    return meta;
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  }
}

namespace {

// SHA-256 through OpenSSL's libcrypto (the CPU's SHA instructions where it has them).
class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new()) {
    if (context_ == nullptr || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
      throw std::runtime_error("sha256: OpenSSL cannot start a digest");
    }
  }
  void update(const void* data, std::size_t size) { EVP_DigestUpdate(context_.get(), data, size); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(context_.get(), digest, &size);
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < size; ++i) out += {kDigits[digest[i] >> 4], kDigits[digest[i] & 15]};
    return out;
  }

 private:
  struct Free {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> context_;
};

}  // namespace

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
