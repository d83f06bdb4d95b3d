#include "baton/train/checkpoint.h"

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
[[noreturn]] void write_failed(const std::string& name, const std::string& why) {
  throw std::runtime_error(name + ": " + why);
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
  std::string out(kCheckpointMagic, sizeof kCheckpointMagic);
  put<uint32_t>(out, kCheckpointFormatVersion);
  put<uint32_t>(out, checkpoint_crc(body.data(), body.size()));
  put<uint64_t>(out, body.size());
  out += body;
  return out;
}

CheckpointFile decode_checkpoint(const std::string& bytes, const std::string& name) {
  CheckpointLayout layout = parse_checkpoint_layout(bytes, name);
  CheckpointFile out;
  for (const TensorEntry& e : layout.tensors) {
    at::Tensor tensor = torch::empty(e.shape, torch::TensorOptions().dtype(dtypes().at(e.dtype)));
    std::memcpy(tensor.data_ptr(), bytes.data() + layout.data_start + e.offset, e.nbytes);
    out.state.tensors[e.name] = tensor;
  }
  out.tensors = layout.meta["tensors"];
  out.state.values = layout.meta.value("values", nlohmann::json::object());
  out.meta = std::move(layout.meta);
  out.meta.erase("tensors");
  out.meta.erase("values");
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  try {
    check_write_target(path, "cannot write");
  } catch (const FileError& e) {
    write_failed(path, std::string(e.what()).substr(path.size() + 2));
  }
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  ::unlink(tmp.c_str());  // one this process left (a failed write); never followed if it is a link
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(path, std::string("cannot write in ") + dir.string() + " (" + std::strerror(errno) + ")");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      write_failed(path, "write failed (" + why + "); the previous checkpoints are intact");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    write_failed(
        path, std::string("cannot flush to disk (") + std::strerror(errno) + "); the previous checkpoints are intact");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    write_failed(path, "cannot rename into place (" + why + ")");
  }
  fsync_path(dir.string(), O_RDONLY | O_DIRECTORY);
}

void write_checkpoint(const std::string& path, const StateDict& state, const nlohmann::json& meta) {
  write_file_atomically(path, encode_checkpoint(state, meta));
}

CheckpointFile read_checkpoint(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path, {.what = "a checkpoint", .max_bytes = 1ull << 40});
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  }
  return decode_checkpoint(bytes, path);
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
