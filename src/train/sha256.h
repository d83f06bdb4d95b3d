// SHA-256, incremental. Private to src/train.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace baton {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  // The digest as 64 hex digits. Call once.
  std::string hex();

 private:
  void block(const unsigned char* p);
  uint32_t h_[8];
  unsigned char buffer_[64] = {};
  std::size_t used_ = 0;
  uint64_t length_ = 0;
};

}  // namespace baton
