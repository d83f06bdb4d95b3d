// JPEG through libjpeg-turbo's libjpeg API (partial decoding: jpeg_crop_scanline, jpeg_skip_scanlines,
// DCT-domain scaling), PNG through libpng's simplified API.
#include "data/image_codec.h"

#include <csetjmp>
#include <cstdio>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

// clang-format off: jpeglib.h needs <cstdio> first
#include <jerror.h>
#include <jpeglib.h>
// clang-format on
#include <png.h>
#include <torch/torch.h>

#include "baton/io/file.h"

namespace baton {
namespace image_detail {
namespace {

constexpr int64_t kMaxSide = 1 << 16;             // a JPEG's limit too: 65,535 pixels a side
constexpr int64_t kMaxPixels = int64_t{1} << 28;  // 256 Mpixels: a decompression bomb otherwise

[[noreturn]] void fail(const std::string& name, const std::string& why) { throw ImageError(name + ": " + why); }

void check_dimensions(const std::string& name, int64_t height, int64_t width) {
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide || height * width > kMaxPixels) {
    fail(name, "an image of " + std::to_string(width) + "x" + std::to_string(height) +
                   " pixels (at most 65535 a side and 256 Mpixels)");
  }
}

// ---- JPEG ----

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// Warnings about the image data are errors: a file that ends early, an end-of-image marker in the
// middle (JWRN_HIT_MARKER), a bad Huffman code or lost restart markers would give gray or garbled
// rows that look like an image. Extraneous bytes before a marker (common in real files, harmless)
// and the rest are what every decoder ignores.
void on_jpeg_message(j_common_ptr info, int level) {
  if (level >= 0) return;
  switch (info->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_BOGUS_PROGRESSION: on_jpeg_error(info); break;
    default: break;
  }
}

// One decompression. Each step catches libjpeg's error (a longjmp) in a function of its own whose
// locals are plain values, and returns false with the message.
class JpegReader {
 public:
  JpegReader(std::string_view bytes) {
    info_.err = jpeg_std_error(&errors_.manager);
    errors_.manager.error_exit = on_jpeg_error;
    errors_.manager.emit_message = on_jpeg_message;
    errors_.message[0] = '\0';
    jpeg_create_decompress(&info_);
    jpeg_mem_src(&info_, reinterpret_cast<const unsigned char*>(bytes.data()),
                 static_cast<unsigned long>(bytes.size()));
  }
  ~JpegReader() { jpeg_destroy_decompress(&info_); }
  JpegReader(const JpegReader&) = delete;
  JpegReader& operator=(const JpegReader&) = delete;

  bool read_header() {
    if (setjmp(errors_.jump)) return false;
    jpeg_read_header(&info_, TRUE);
    return true;
  }

  // Starts decoding at 1/denominator scale, the columns [*left, *left + *width) of the scaled image
  // (widened to whole iMCUs: both are updated) from row `top`.
  bool start(int denominator, J_COLOR_SPACE space, JDIMENSION* left, JDIMENSION* width, JDIMENSION top) {
    if (setjmp(errors_.jump)) return false;
    info_.scale_num = 1;
    info_.scale_denom = static_cast<unsigned int>(denominator);
    info_.out_color_space = space;
    info_.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&info_);
    if (*left > 0 || *width < info_.output_width) jpeg_crop_scanline(&info_, left, width);
    if (top > 0 && jpeg_skip_scanlines(&info_, top) != top) return false;
    return true;
  }

  // As many rows a call as libjpeg gives (a row group: up to 16), not one: fewer trips through its
  // controllers.
  bool read_rows(unsigned char* out, JDIMENSION rows, size_t stride) {
    std::vector<JSAMPROW> pointers(rows);
    for (JDIMENSION row = 0; row < rows; ++row) pointers[row] = out + row * stride;
    if (setjmp(errors_.jump)) return false;
    for (JDIMENSION row = 0; row < rows;) {
      const JDIMENSION got = jpeg_read_scanlines(&info_, pointers.data() + row, rows - row);
      if (got == 0) return false;
      row += got;
    }
    return true;
  }

  jpeg_decompress_struct& info() { return info_; }
  std::string message() const { return errors_.message[0] ? errors_.message : "the data ends early"; }

 private:
  jpeg_decompress_struct info_{};
  JpegErrors errors_{};
};

bool is_cmyk(const jpeg_decompress_struct& info) {
  return info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
}

// CMYK rows (Adobe's inverted values, as Photoshop writes them) into RGB or gray, in place.
void cmyk_to(int channels, bool inverted, unsigned char* pixels, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* p = pixels + i * 4;
    int c = p[0], m = p[1], y = p[2], k = p[3];
    if (!inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
    const int r = c * k / 255, g = m * k / 255, b = y * k / 255;
    unsigned char* q = pixels + i * channels;
    if (channels == 3) {
      q[0] = static_cast<unsigned char>(r), q[1] = static_cast<unsigned char>(g), q[2] = static_cast<unsigned char>(b);
    } else {
      q[0] = static_cast<unsigned char>((299 * r + 587 * g + 114 * b + 500) / 1000);
    }
  }
}

ImageSize jpeg_size(std::string_view bytes, const std::string& name) {
  JpegReader reader(bytes);
  if (!reader.read_header()) fail(name, "not a readable JPEG (" + reader.message() + ")");
  const ImageSize size{reader.info().image_height, reader.info().image_width};
  check_dimensions(name, size.height, size.width);
  return size;
}

Decoded decode_jpeg(std::string_view bytes, const std::string& name, int channels, const ImageRegion& region,
                    ImageSize at_least) {
  JpegReader reader(bytes);
  if (!reader.read_header()) fail(name, "not a readable JPEG (" + reader.message() + ")");
  jpeg_decompress_struct& info = reader.info();
  const int64_t height = info.image_height, width = info.image_width;
  check_dimensions(name, height, width);
  // The whole-pixel cover of the region, in the file's pixels.
  const int64_t y0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(region.top)), 0, height - 1);
  const int64_t x0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(region.left)), 0, width - 1);
  const int64_t y1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(region.top + region.height)), y0 + 1, height);
  const int64_t x1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(region.left + region.width)), x0 + 1, width);
  // The smallest scale that keeps the region at least the wanted size.
  const bool full = at_least.height <= 0 || at_least.width <= 0;  // no size wanted: every pixel
  int denominator = full ? 1 : 8;
  while (denominator > 1 && ((y1 - y0) / denominator < at_least.height || (x1 - x0) / denominator < at_least.width))
    denominator /= 2;
  const bool cmyk = is_cmyk(info);
  const J_COLOR_SPACE space = cmyk ? JCS_CMYK : (channels == 1 ? JCS_GRAYSCALE : JCS_RGB);
  // The scaled image is ceil(size / denominator) pixels a side.
  const int64_t scaled_h = (height + denominator - 1) / denominator, scaled_w = (width + denominator - 1) / denominator;
  const double step_y = static_cast<double>(height) / static_cast<double>(scaled_h);
  const double step_x = static_cast<double>(width) / static_cast<double>(scaled_w);
  const auto top = static_cast<JDIMENSION>(std::floor(static_cast<double>(y0) / step_y));
  const auto bottom = static_cast<JDIMENSION>(
      std::min<double>(static_cast<double>(scaled_h), std::ceil(static_cast<double>(y1) / step_y)));
  auto left = static_cast<JDIMENSION>(std::floor(static_cast<double>(x0) / step_x));
  auto cols = static_cast<JDIMENSION>(
      std::min<double>(static_cast<double>(scaled_w), std::ceil(static_cast<double>(x1) / step_x)) - left);
  if (!reader.start(denominator, space, &left, &cols, top)) fail(name, "a corrupt JPEG (" + reader.message() + ")");
  const int components = info.output_components;
  const JDIMENSION rows = bottom - top;
  at::Tensor pixels = at::empty({static_cast<int64_t>(rows), static_cast<int64_t>(cols), components}, at::kByte);
  if (!reader.read_rows(pixels.data_ptr<unsigned char>(), rows, static_cast<size_t>(cols) * components)) {
    fail(name, "a truncated or corrupt JPEG (" + reader.message() + ")");
  }
  if (cmyk) {
    cmyk_to(channels, info.saw_Adobe_marker, pixels.data_ptr<unsigned char>(), static_cast<int64_t>(rows) * cols);
    pixels = pixels.flatten().slice(0, 0, static_cast<int64_t>(rows) * cols * channels).view({rows, cols, channels});
  }
  return {pixels, top * step_y, left * step_x, step_y, step_x};
}

// ---- PNG ----

struct PngImage {
  png_image image{};
  PngImage() { image.version = PNG_IMAGE_VERSION; }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

void begin_png(PngImage& png, std::string_view bytes, const std::string& name) {
  if (!png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size())) {
    fail(name, std::string("not a readable PNG (") + png.image.message + ")");
  }
  check_dimensions(name, png.image.height, png.image.width);
  // Palette pixels (PIL's mode P) are expanded by libpng to the gray or RGB asked for, with their
  // transparency as alpha.
  if (png.image.format & PNG_FORMAT_FLAG_LINEAR) {
    fail(name, "a PNG with 16-bit pixels; write it with 8 bits a channel (e.g. convert IN -depth 8 OUT)");
  }
}

Decoded decode_png(std::string_view bytes, const std::string& name, int channels) {
  PngImage png;
  begin_png(png, bytes, name);
  const bool alpha = (png.image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  // With alpha, read it and drop it (as PIL's convert does: no compositing).
  const int read_channels = channels + (alpha ? 1 : 0);
  png.image.format =
      channels == 1 ? (alpha ? PNG_FORMAT_GA : PNG_FORMAT_GRAY) : (alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB);
  const int64_t height = png.image.height, width = png.image.width;
  at::Tensor pixels = at::empty({height, width, read_channels}, at::kByte);
  if (!png_image_finish_read(&png.image, nullptr, pixels.data_ptr<unsigned char>(), 0, nullptr)) {
    fail(name, std::string("a truncated or corrupt PNG (") + png.image.message + ")");
  }
  if (alpha) pixels = pixels.slice(2, 0, channels).contiguous();
  return {pixels, 0, 0, 1, 1};
}

}  // namespace

Format format_of(std::string_view bytes, const std::string& name) {
  static constexpr unsigned char kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
      static_cast<unsigned char>(bytes[1]) == 0xD8 && static_cast<unsigned char>(bytes[2]) == 0xFF)
    return Format::kJpeg;
  if (bytes.size() >= sizeof(kPng) && std::memcmp(bytes.data(), kPng, sizeof(kPng)) == 0) return Format::kPng;
  fail(name, bytes.empty() ? "an empty file, not an image" : "not a JPEG or PNG file");
}

Decoded decode_region(std::string_view bytes, const std::string& name, int channels, const ImageRegion& region,
                      ImageSize at_least) {
  if (channels != 1 && channels != 3) fail(name, "channels must be 1 or 3, got " + std::to_string(channels));
  if (format_of(bytes, name) == Format::kPng) return decode_png(bytes, name, channels);
  ImageRegion whole = region;
  if (region.height <= 0 || region.width <= 0) whole = {0, 0, 1e18, 1e18};
  return decode_jpeg(bytes, name, channels, whole, at_least);
}

}  // namespace image_detail

using image_detail::Format;

ImageSize image_size(std::string_view bytes, const std::string& name) {
  if (image_detail::format_of(bytes, name) == Format::kJpeg) return image_detail::jpeg_size(bytes, name);
  image_detail::PngImage png;
  image_detail::begin_png(png, bytes, name);
  return {png.image.height, png.image.width};
}

at::Tensor decode_image(std::string_view bytes, const std::string& name, int channels) {
  return image_detail::decode_region(bytes, name, channels, {}, {}).pixels;
}

std::string read_image_file(const std::string& path) {
  try {
    return read_file(path, {.what = "the image"});
  } catch (const FileError& e) {
    throw ImageError(e.what());
  }
}

void write_png(const std::string& path, const at::Tensor& pixels) {
  const at::Tensor p = pixels.contiguous();
  if (p.dim() != 3 || p.scalar_type() != at::kByte || (p.size(2) != 1 && p.size(2) != 3))
    throw ImageError(path + ": write_png takes uint8 [H, W, 1 or 3] pixels");
  image_detail::PngImage png;
  png.image.width = static_cast<png_uint_32>(p.size(1));
  png.image.height = static_cast<png_uint_32>(p.size(0));
  png.image.format = p.size(2) == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&png.image, path.c_str(), 0, p.data_ptr<unsigned char>(), 0, nullptr))
    throw ImageError(path + ": " + png.image.message);
}

void write_jpeg(const std::string& path, const at::Tensor& pixels, int quality) {
  const at::Tensor p = pixels.contiguous();
  if (p.dim() != 3 || p.scalar_type() != at::kByte || (p.size(2) != 1 && p.size(2) != 3))
    throw ImageError(path + ": write_jpeg takes uint8 [H, W, 1 or 3] pixels");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw ImageError(path + ": cannot be written (" + std::strerror(errno) + ")");
  jpeg_compress_struct info{};
  image_detail::JpegErrors errors{};
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = image_detail::on_jpeg_error;
  jpeg_create_compress(&info);
  if (setjmp(errors.jump)) {
    jpeg_destroy_compress(&info);
    throw ImageError(path + ": " + errors.message);
  }
  jpeg_stdio_dest(&info, file.get());
  info.image_width = static_cast<JDIMENSION>(p.size(1));
  info.image_height = static_cast<JDIMENSION>(p.size(0));
  info.input_components = static_cast<int>(p.size(2));
  info.in_color_space = p.size(2) == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, std::clamp(quality, 1, 100), TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t stride = static_cast<size_t>(p.size(1) * p.size(2));
  auto* data = p.data_ptr<unsigned char>();
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = data + info.next_scanline * stride;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
}

}  // namespace baton
