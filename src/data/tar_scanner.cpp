#include "data/tar_scanner.h"

#include <cctype>

namespace baton {

// A tar header's number field: octal, or base-256 (GNU, for large sizes); UINT64_MAX when neither.
uint64_t tar_number(const char* field, size_t size) {
  if (static_cast<unsigned char>(field[0]) & 0x80) {  // base-256 (GNU, for large sizes)
    uint64_t v = static_cast<unsigned char>(field[0]) & 0x7f;
    for (size_t i = 1; i < size; ++i) {
      if (v > (UINT64_MAX >> 9)) return UINT64_MAX;  // beyond any size (and never wrapped to a small one)
      v = (v << 8) | static_cast<unsigned char>(field[i]);
    }
    return v;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < size && field[i] != '\0'; ++i) {
    if (field[i] == ' ') continue;
    if (field[i] < '0' || field[i] > '7') return UINT64_MAX;
    v = v * 8 + static_cast<uint64_t>(field[i] - '0');
  }
  return v;
}

// Whether `block` (512 bytes) is a tar header whose checksum holds.
bool tar_checksum_holds(std::string_view block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
  return tar_number(&block[148], 8) == sum;
}

bool is_label_name(const std::string& name) {
  if (name.size() < 4) return false;
  std::string ext = name.substr(name.size() - 4);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".cls";
}

}  // namespace baton
