// The decoders behind images.h: a region of a JPEG or PNG file at a scale, into a buffer of rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <ATen/core/Tensor.h>

#include "baton/data/images.h"

namespace baton::image_detail {

enum class Format { kJpeg, kPng };

// JPEG or PNG by the file's first bytes; throws ImageError for anything else.
Format format_of(std::string_view bytes, const std::string& name);

// Decoded pixels of a region: `pixels` uint8 [h, w, channels] hold the source's rows and columns
// [top, top + h * step_y) x [left, left + w * step_x), each decoded pixel standing for step_y x
// step_x source pixels (a DCT scale), so a source coordinate y is (y - top) / step_y here.
struct Decoded {
  at::Tensor pixels;
  double top = 0;
  double left = 0;
  double step_y = 1;
  double step_x = 1;
};

// Decodes at least the whole-pixel cover of `region` (the whole image when its size is 0), a JPEG at
// the smallest DCT scale that keeps the region at least `at_least` in size. Throws ImageError.
Decoded decode_region(std::string_view bytes, const std::string& name, int channels, const ImageRegion& region,
                      ImageSize at_least);

}  // namespace baton::image_detail
