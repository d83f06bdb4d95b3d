#include "baton/loggers/jsonl_logger.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <utility>

#include "baton/core/state.h"

namespace baton {
namespace {

std::FILE* open_or_throw(const std::string& path, const char* mode) {
  std::FILE* file = std::fopen(path.c_str(), mode);
  if (file == nullptr) throw std::runtime_error(path + ": cannot write metrics (" + std::strerror(errno) + ")");
  return file;
}

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct JsonlLogger::Impl {
  std::FILE* file_;
  std::string path_;
  bool deciding_ = false;                // resume: lines wait until after_load says from where
  std::vector<std::string> waiting_;     // meanwhile
  std::map<std::string, int64_t> runs_;  // trace key -> times it ran since the last traces line
};

JsonlLogger::JsonlLogger(const std::string& path, bool resume) : impl_(std::make_unique<Impl>()) {
  impl_->file_ = open_or_throw(path, resume ? "a" : "w");
  impl_->path_ = path;
  impl_->deciding_ = resume;
}

JsonlLogger::~JsonlLogger() {
  if (impl_->file_ != nullptr) std::fclose(impl_->file_);
}

// Each line reaches the file at once (one write of ~200 bytes, a few microseconds): a checkpoint
// written after it must never cover a batch whose line a kill -9 could still take away.
void JsonlLogger::write(const std::string& line) {
  if (impl_->deciding_) {
    impl_->waiting_.push_back(line);
  } else if (impl_->file_ != nullptr && (std::fwrite(line.data(), 1, line.size(), impl_->file_) != line.size() ||
                                         std::fflush(impl_->file_) != 0)) {
    throw std::runtime_error(impl_->path_ + ": cannot write metrics (" + std::strerror(errno) + ")");
  }
}

void JsonlLogger::log_metrics(const Metrics& metrics, int64_t step) {
  nlohmann::json line = {{"step", step}, {"time", seconds_since_epoch()}};
  for (const auto& [name, value] : metrics) line[name] = value;
  write(line.dump() + "\n");
}

void JsonlLogger::log_hyperparameters(const nlohmann::json& hyperparameters) {
  write(nlohmann::json{{"hyperparameters", hyperparameters}}.dump() + "\n");
}

void JsonlLogger::log_traces(const Traces& traces) {
  for (const auto& [key, trace] : traces) {
    if (trace.run) ++impl_->runs_[key];
  }
}

void JsonlLogger::write_traces(int64_t step) {
  if (impl_->runs_.empty()) return;
  const nlohmann::json line = {{"step", step}, {"time", seconds_since_epoch()}, {"traces", impl_->runs_}};
  impl_->runs_.clear();
  write(line.dump() + "\n");
}

void JsonlLogger::continue_from(int64_t batch) {
  std::string kept;
  if (batch > 0) {
    std::ifstream in(impl_->path_);
    std::string line;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) continue;  // cut short by a kill
      if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > batch) continue;
      kept += line + "\n";
    }
  }
  // Written beside and renamed: a kill now leaves the old file or the new one, whole.
  const std::string tmp = impl_->path_ + ".tmp";
  std::FILE* out = open_or_throw(tmp, "w");
  std::fwrite(kept.data(), 1, kept.size(), out);
  for (const auto& line : impl_->waiting_) std::fwrite(line.data(), 1, line.size(), out);
  if (std::fclose(out) != 0 || std::rename(tmp.c_str(), impl_->path_.c_str()) != 0) {
    throw std::runtime_error(impl_->path_ + ": cannot write metrics (" + std::strerror(errno) + ")");
  }
  impl_->waiting_.clear();
  impl_->deciding_ = false;
  if (impl_->file_ != nullptr) std::fclose(impl_->file_);
  impl_->file_ = open_or_throw(impl_->path_, "a");
}

void JsonlLogger::after_load(State& state, Logger&) {
  if (impl_->deciding_) continue_from(state.timestamp.batch());
}

void JsonlLogger::epoch_end(State& state, Logger&) {
  write_traces(state.timestamp.batch());
  if (impl_->file_ != nullptr && std::fflush(impl_->file_) != 0) {
    throw std::runtime_error(impl_->path_ + ": cannot write metrics (" + std::strerror(errno) + ")");
  }
}

void JsonlLogger::close(State& state, Logger&) {
  // Still deciding: the run never got past loading (a resume refused): its file stays as it was.
  if (impl_->deciding_) impl_->waiting_.clear();
  if (!impl_->deciding_) write_traces(state.timestamp.batch());
  std::FILE* file = std::exchange(impl_->file_, nullptr);
  if (file != nullptr && std::fclose(file) != 0) {  // what was buffered could not be written
    throw std::runtime_error(impl_->path_ + ": cannot write metrics (" + std::strerror(errno) + ")");
  }
}

}  // namespace baton
