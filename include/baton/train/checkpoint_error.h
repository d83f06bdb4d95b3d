// CheckpointError (what is wrong with a checkpoint file; the message starts with the file's path)
// and the format version this baton writes and reads. No LibTorch here.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace baton {

inline constexpr uint32_t kCheckpointFormatVersion = 1;

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace baton
