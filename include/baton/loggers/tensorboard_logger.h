// TensorBoardLogger: scalars and hyperparameters in TensorBoard's event-file format, written
// without TensorFlow or protobuf: `<dir>/events.out.tfevents.<unix time>.<host>`, a TFRecord file
// (each record: length, masked CRC32C of the length, an Event protobuf, masked CRC32C of it; the
// first Event has file_version "brain.Event:2"). Every metric becomes a scalar (simple_value) at
// its step; hyperparameters become one text summary ("hyperparameters", JSON).
//
//   tensorboard --logdir runs/fashion_mnist/tensorboard
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "baton/core/logger.h"

namespace baton {

class TensorBoardLogger : public LoggerDestination {
 public:
  // Creates `dir` and the event file. Throws std::runtime_error naming the path when it cannot.
  explicit TensorBoardLogger(const std::string& dir);
  ~TensorBoardLogger() override;

  void log_metrics(const Metrics& metrics, int64_t step) override;
  void log_hyperparameters(const nlohmann::json& hyperparameters) override;
  void epoch_end(State& state, Logger& logger) override;
  void close(State& state, Logger& logger) override;

  const std::string& path() const;

 private:
  void write_event(const std::string& event);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace tensorboard {
// CRC-32C (Castagnoli), as TFRecord uses it, and its masked form.
uint32_t crc32c(std::string_view data);
uint32_t masked_crc32c(std::string_view data);
// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
std::string record(std::string_view data);
// The Event protobuf of a scalar, and of the file version.
std::string scalar_event(double wall_time, int64_t step, const std::string& tag, float value);
std::string file_version_event(double wall_time);
}  // namespace tensorboard

}  // namespace baton
