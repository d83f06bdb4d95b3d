#include "baton/loggers/jsonl_logger.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace baton {

JsonlLogger::JsonlLogger(const std::string& path) : file_(std::fopen(path.c_str(), "w")), path_(path) {
  if (file_ == nullptr) throw std::runtime_error(path + ": cannot write metrics (" + std::strerror(errno) + ")");
}

JsonlLogger::~JsonlLogger() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonlLogger::log_metrics(const Metrics& metrics, int64_t step) {
  if (file_ == nullptr) return;
  nlohmann::json line = {
      {"step", step},
      {"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}};
  for (const auto& [name, value] : metrics) line[name] = value;
  const std::string text = line.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
}

void JsonlLogger::log_hyperparameters(const nlohmann::json& hyperparameters) {
  if (file_ == nullptr) return;
  const std::string text = nlohmann::json{{"hyperparameters", hyperparameters}}.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
}

void JsonlLogger::epoch_end(State&, Logger&) {
  if (file_ != nullptr) std::fflush(file_);
}

void JsonlLogger::close(State&, Logger&) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace baton
