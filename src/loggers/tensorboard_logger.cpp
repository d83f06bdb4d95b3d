#include "baton/loggers/tensorboard_logger.h"

#include <unistd.h>
#include <memory>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace baton {
namespace tensorboard {
namespace {

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) ? (c >> 1) ^ 0x82F63B78U : c >> 1;  // reflected Castagnoli
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Protobuf wire format, only what Event needs.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void tag(std::string& out, int field, int wire) {
  varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire));
}
void bytes_field(std::string& out, int field, std::string_view data) {
  tag(out, field, 2);
  varint(out, data.size());
  out.append(data);
}
template <typename T>
void fixed(std::string& out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));  // little-endian hosts (x86-64, aarch64)
  out.append(buf, sizeof(T));
}

std::string event_head(double wall_time, int64_t step) {
  std::string e;
  tag(e, 1, 1);  // wall_time: double
  fixed(e, wall_time);
  tag(e, 2, 0);  // step: int64
  varint(e, static_cast<uint64_t>(step));
  return e;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFU;
  for (unsigned char b : data) c = crc_table()[(c ^ b) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8U;
}

std::string record(std::string_view data) {
  std::string out;
  std::string length;
  fixed(length, static_cast<uint64_t>(data.size()));
  out += length;
  fixed(out, masked_crc32c(length));
  out.append(data);
  fixed(out, masked_crc32c(data));
  return out;
}

std::string scalar_event(double wall_time, int64_t step, const std::string& name, float value) {
  std::string v;
  bytes_field(v, 1, name);  // Summary.Value.tag
  tag(v, 2, 5);             // simple_value: float
  fixed(v, value);
  std::string summary;
  bytes_field(summary, 1, v);  // Summary.value
  std::string e = event_head(wall_time, step);
  bytes_field(e, 5, summary);  // Event.summary
  return e;
}

std::string file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  bytes_field(e, 3, "brain.Event:2");
  return e;
}

// A text summary (TensorBoard's text plugin): a scalar string tensor.
std::string text_event(double wall_time, int64_t step, const std::string& name, const std::string& text) {
  std::string plugin;
  bytes_field(plugin, 1, "text");  // PluginData.plugin_name
  std::string metadata;
  bytes_field(metadata, 1, plugin);  // SummaryMetadata.plugin_data
  std::string tensor;
  tag(tensor, 1, 0);             // dtype
  varint(tensor, 7);             // DT_STRING
  bytes_field(tensor, 2, "");    // tensor_shape: a scalar
  bytes_field(tensor, 8, text);  // string_val
  std::string v;
  bytes_field(v, 1, name);
  bytes_field(v, 9, metadata);  // Summary.Value.metadata
  bytes_field(v, 8, tensor);    // Summary.Value.tensor
  std::string summary;
  bytes_field(summary, 1, v);
  std::string e = event_head(wall_time, step);
  bytes_field(e, 5, summary);
  return e;
}

}  // namespace tensorboard

namespace {

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

struct TensorBoardLogger::Impl {
  std::FILE* file_ = nullptr;
  std::string path_;
};

const std::string& TensorBoardLogger::path() const { return impl_->path_; }

TensorBoardLogger::TensorBoardLogger(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the TensorBoard folder (" + ec.message() + ")");
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  impl_->path_ =
      (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now())) + "." + host))
          .string();
  // A resumed run may start within the same second as the one before: never overwrite its file.
  const std::string base = impl_->path_;
  for (int i = 1; std::filesystem::exists(impl_->path_); ++i) impl_->path_ = base + "." + std::to_string(i);
  impl_->file_ = std::fopen(impl_->path_.c_str(), "wb");
  if (impl_->file_ == nullptr) throw std::runtime_error(impl_->path_ + ": cannot write the TensorBoard event file");
  write_event(tensorboard::file_version_event(now()));
}

TensorBoardLogger::~TensorBoardLogger() {
  if (impl_->file_ != nullptr) std::fclose(impl_->file_);
}

void TensorBoardLogger::write_event(const std::string& event) {
  if (impl_->file_ == nullptr) return;
  const std::string r = tensorboard::record(event);
  std::fwrite(r.data(), 1, r.size(), impl_->file_);
}

void TensorBoardLogger::log_metrics(const Metrics& metrics, int64_t step) {
  const double t = now();
  for (const auto& [name, value] : metrics)
    write_event(tensorboard::scalar_event(t, step, name, static_cast<float>(value)));
}

void TensorBoardLogger::log_hyperparameters(const nlohmann::json& hyperparameters) {
  write_event(tensorboard::text_event(now(), 0, "hyperparameters", "```\n" + hyperparameters.dump(2) + "\n```"));
}

void TensorBoardLogger::epoch_end(State& /*state*/, Logger& /*logger*/) {
  if (impl_->file_ != nullptr) std::fflush(impl_->file_);
}

void TensorBoardLogger::close(State& /*state*/, Logger& /*logger*/) {
  if (impl_->file_ != nullptr) std::fclose(impl_->file_);
  impl_->file_ = nullptr;
}

}  // namespace baton
