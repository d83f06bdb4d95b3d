#include "baton/models/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/io/write.h"

namespace baton {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit
constexpr uint64_t kMaxFileBytes = 64ull << 30;
constexpr const char* kModulePrefix = "module.";

struct DType {
  const char* name;
  at::ScalarType type;
};
constexpr DType kDTypes[] = {{"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
                             {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
                             {"U8", at::kByte},    {"BOOL", at::kBool}};

std::optional<at::ScalarType> dtype_of(const std::string& name) {
  for (const DType& d : kDTypes) {
    if (name == d.name) return d.type;
  }
  return std::nullopt;
}

const char* name_of(at::ScalarType type) {
  for (const DType& d : kDTypes) {
    if (type == d.type) return d.name;
  }
  return nullptr;
}

void read_exactly(int fd, void* out, uint64_t bytes, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, std::min<uint64_t>(bytes, 1ull << 30), static_cast<off_t>(offset));
    if (n <= 0) throw std::runtime_error(path + ": cannot read it: " + (n == 0 ? "cut short" : std::strerror(errno)));
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
}

struct Entry {
  std::string name;
  at::ScalarType type;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
};

// One header entry, checked: its dtype, its shape's bytes against its range.
Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::ordered_json& value) {
  const auto bad = [&](const std::string& why) { return std::runtime_error(path + ": tensor '" + name + "': " + why); };
  if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets")) {
    throw bad("expected {dtype, shape, data_offsets}");
  }
  const nlohmann::ordered_json& dtype = value["dtype"];
  const auto type = dtype.is_string() ? dtype_of(dtype.get<std::string>()) : std::nullopt;
  if (!type)
    throw bad("dtype " + dtype.dump() + " is not one baton reads (F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
  Entry e{name, *type, {}, 0, 0};
  uint64_t elements = 1;
  if (!value["shape"].is_array() || value["shape"].size() > 16) throw bad("shape must be a list of at most 16 sizes");
  for (const auto& d : value["shape"]) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > (1ull << 40)) throw bad("shape " + value["shape"].dump());
    e.shape.push_back(d.get<int64_t>());
    if (__builtin_mul_overflow(elements, d.get<uint64_t>(), &elements)) throw bad("shape " + value["shape"].dump());
  }
  const nlohmann::ordered_json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    throw bad("data_offsets must be [begin, end]");
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(c10::elementSize(e.type)), &bytes) || e.end < e.begin ||
      e.end - e.begin != bytes) {
    throw bad("shape " + value["shape"].dump() + " of " + dtype.get<std::string>() + " is " + std::to_string(bytes) +
              " bytes, but data_offsets " + offsets.dump() + " hold " +
              std::to_string(e.end >= e.begin ? e.end - e.begin : 0));
  }
  return e;
}

}  // namespace

NamedTensors read_safetensors(const std::string& path) {
  ReadableFile file(path, {.what = "the safetensors file", .max_bytes = kMaxFileBytes});
  uint64_t header_bytes = 0;
  if (file.size() < 8)
    throw std::runtime_error(path + ": " + std::to_string(file.size()) + " bytes: not a safetensors file");
  unsigned char length[8];
  read_exactly(file.fd(), length, 8, 0, path);
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length[i];
  if (header_bytes > kMaxHeaderBytes || header_bytes + 8 > file.size()) {
    throw std::runtime_error(path + ": a header of " + std::to_string(header_bytes) + " bytes in a file of " +
                             std::to_string(file.size()) + ": not a safetensors file");
  }
  std::string text(header_bytes, '\0');
  read_exactly(file.fd(), text.data(), header_bytes, 8, path);
  nlohmann::ordered_json header;  // the file's order of tensors kept
  try {
    header = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(path + ": the header is not JSON: not a safetensors file");
  }
  if (!header.is_object()) throw std::runtime_error(path + ": the header is not a JSON object: not a safetensors file");
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name != "__metadata__") entries.push_back(parse_entry(path, name, value));
  }
  // The byte ranges tile the data exactly, as the format requires: no overlap, no gap, no excess.
  std::vector<const Entry*> by_offset;
  by_offset.reserve(entries.size());
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t at = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != at) throw std::runtime_error(path + ": tensor '" + e->name + "' overlaps another or leaves a gap");
    at = e->end;
  }
  const uint64_t data_bytes = file.size() - 8 - header_bytes;
  if (at != data_bytes) {
    throw std::runtime_error(path + ": the tensors hold " + std::to_string(at) + " bytes but the file has " +
                             std::to_string(data_bytes) + " after its header: cut short or not a safetensors file");
  }
  NamedTensors out;
  for (const Entry& e : entries) {
    at::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.type));
    if (e.end > e.begin) read_exactly(file.fd(), t.data_ptr(), e.end - e.begin, 8 + header_bytes + e.begin, path);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  uint64_t at = 0;
  for (const auto& [name, tensor] : tensors) {
    const char* dtype = name_of(tensor.scalar_type());
    if (dtype == nullptr) {
      throw std::invalid_argument("tensor '" + name + "': dtype " + std::string(c10::toString(tensor.scalar_type())) +
                                  " has no safetensors name");
    }
    if (header.contains(name)) throw std::invalid_argument("tensor '" + name + "' named twice");
    data.push_back(tensor.detach().to(torch::kCPU).contiguous());
    const auto bytes = static_cast<uint64_t>(data.back().nbytes());
    header[name] = {{"dtype", dtype}, {"shape", tensor.sizes().vec()}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bytes += text;
  for (const at::Tensor& t : data) bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  write_file_atomically(path, bytes);
}

NamedTensors model_tensors(const torch::nn::Module& module) {
  NamedTensors out;
  auto add = [&](const std::string& key, const at::Tensor& t) {
    if (!t.defined()) return;
    out.emplace_back(key.starts_with(kModulePrefix) ? key.substr(std::strlen(kModulePrefix)) : key, t);
  };
  for (const auto& p : module.named_parameters()) add(p.key(), p.value());
  for (const auto& b : module.named_buffers()) add(b.key(), b.value());
  return out;
}

void load_safetensors(torch::nn::Module& module, const std::string& path) {
  const NamedTensors file = read_safetensors(path);
  std::map<std::string, at::Tensor> by_name;
  std::map<std::string, std::string> given;  // the name the model knows -> the file's name for it
  for (const auto& [name, t] : file) {
    const std::string key = name.starts_with(kModulePrefix) ? name.substr(std::strlen(kModulePrefix)) : name;
    if (const auto [at, fresh] = given.emplace(key, name); !fresh) {  // never one silently winning
      throw std::runtime_error(path + ": tensors '" + one_line(at->second, 120) + "' and '" + one_line(name, 120) +
                               "' are both the model's '" + one_line(key, 120) +
                               "' (a DataParallel 'module.' prefix on one of them): keep one");
    }
    by_name[key] = t;
  }
  std::vector<std::string> missing;
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : model_tensors(module)) {
    const auto found = by_name.find(name);
    if (found == by_name.end()) {
      missing.push_back(name);
      continue;
    }
    if (found->second.sizes() != target.sizes()) {
      std::string why = path;
      why += ": tensor '" + name + "' has shape " + c10::str(found->second.sizes());
      why += " but the model's is " + c10::str(target.sizes());
      throw std::runtime_error(why);
    }
    target.copy_(found->second);
    used.insert(name);
  }
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", " : "") + names[i];
    return s + (names.size() > 5 ? ", … (" + std::to_string(names.size()) + " in all)" : "");
  };
  if (!missing.empty()) {
    throw std::runtime_error(path + ": no tensor for the model's " + list(missing) + ": weights of another model?");
  }
  std::vector<std::string> extra;
  for (const auto& [name, t] : by_name) {
    if (used.count(name) == 0) extra.push_back(name);
  }
  if (!extra.empty()) throw std::runtime_error(path + ": tensors the model does not have: " + list(extra));
}

bool is_safetensors(const std::string& path) {
  try {
    ReadableFile file(path, {.what = "the weights", .max_bytes = kMaxFileBytes});
    unsigned char head[9];
    if (file.size() < 10 || ::pread(file.fd(), head, 9, 0) != 9) return false;
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | head[i];
    return length <= kMaxHeaderBytes && length + 8 <= file.size() && head[8] == '{';
  } catch (const FileError&) {
    return false;
  }
}

}  // namespace baton
