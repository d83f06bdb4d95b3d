// The transforms of an image pipeline, folded into a plan (a region of the file, an output size, a
// flip), and the resampling that renders a plan from the decoded pixels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/data/image_folder.h"
#include "baton/data/images.h"
#include "data/image_codec.h"

namespace baton {
namespace {

std::string size_text(ImageSize s) { return std::to_string(s.width) + "x" + std::to_string(s.height); }

// A size given as N (a square) or [height, width].
ImageSize read_size(const nlohmann::json& v, const std::string& where) {
  auto side = [&](const nlohmann::json& n) {
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxImageSide) {
      throw std::invalid_argument(where + ": expected a size in pixels from 1 to " + std::to_string(kMaxImageSide) +
                                  ", got '" + n.dump() + "'");
    }
    return n.get<int64_t>();
  };
  if (v.is_array() && v.size() == 2) return {side(v[0]), side(v[1])};
  const int64_t s = side(v);
  return {s, s};
}

// A pair [low, high] of positive numbers, low <= high.
void read_range(const nlohmann::json& v, double (&range)[2], const std::string& where) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number() ||
      !(v[0].get<double>() > 0 && v[0].get<double>() <= v[1].get<double>() && std::isfinite(v[1].get<double>())))
    throw std::invalid_argument(where + ": expected [low, high], 0 < low <= high, got '" + v.dump() + "'");
  range[0] = v[0].get<double>();
  range[1] = v[1].get<double>();
}

// One output axis of the resampler: for each output pixel, the first input pixel and the weights
// of the inputs from there (a triangle filter as wide as the scale, so a shrink is antialiased).
struct Taps {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<float> weights;  // `width` a pixel
  int64_t width = 0;
};

// Output pixel o (of `outputs`) samples input coordinate start + (o + 0.5) * span / outputs, in
// input pixels whose centres are at i + 0.5 (of `inputs`; edges repeat).
Taps make_taps(double start, double span, int64_t outputs, int64_t inputs) {
  const double scale = span / static_cast<double>(outputs);
  const double radius = std::max(1.0, scale);
  Taps taps;
  taps.width = static_cast<int64_t>(std::ceil(radius)) * 2 + 1;
  taps.first.resize(outputs);
  taps.count.resize(outputs);
  taps.weights.assign(outputs * taps.width, 0.0f);
  for (int64_t o = 0; o < outputs; ++o) {
    const double centre = start + (static_cast<double>(o) + 0.5) * scale - 0.5;
    const auto lo = static_cast<int64_t>(std::ceil(centre - radius));
    const auto hi = static_cast<int64_t>(std::floor(centre + radius));
    const int64_t first = std::clamp<int64_t>(lo, 0, inputs - 1);
    const int64_t last = std::clamp<int64_t>(hi, 0, inputs - 1);
    taps.first[o] = first;
    taps.count[o] = last - first + 1;
    float* w = &taps.weights[o * taps.width];
    double total = 0;
    for (int64_t i = lo; i <= hi; ++i) {
      const double weight = std::max(0.0, 1.0 - std::abs(static_cast<double>(i) - centre) / radius);
      const int64_t at = std::clamp<int64_t>(i, 0, inputs - 1) - first;  // an edge's weight goes to it
      if (at < taps.width) w[at] += static_cast<float>(weight);
      total += weight;
    }
    if (total <= 0) {  // cannot happen with radius >= 1; kept for a degenerate span
      w[std::clamp<int64_t>(static_cast<int64_t>(std::lround(centre)), first, last) - first] = 1.0f;
      total = 1;
    }
    for (int64_t k = 0; k < taps.count[o]; ++k) w[k] = static_cast<float>(w[k] / total);
  }
  return taps;
}

}  // namespace

const std::vector<std::string>& image_transform_names() {
  static const std::vector<std::string> names = {"random_resized_crop", "resize", "center_crop", "horizontal_flip"};
  return names;
}

struct ImageTransforms::Impl {
  std::vector<Step> steps_;
  int64_t image_size_ = 0;
};

ImageTransforms::ImageTransforms() : impl_(std::make_unique<Impl>()) {}
ImageTransforms::~ImageTransforms() = default;
ImageTransforms::ImageTransforms(const ImageTransforms& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
ImageTransforms& ImageTransforms::operator=(const ImageTransforms& other) {
  *impl_ = *other.impl_;
  return *this;
}

ImageTransforms ImageTransforms::parse(const nlohmann::json& steps, int64_t image_size, const std::string& where) {
  ImageTransforms t;
  t.impl_->image_size_ = image_size;
  if (!steps.is_null() && !steps.is_array())
    throw std::invalid_argument(where +
                                ": expected a list of transforms, e.g. [{random_resized_crop: {}}, horizontal_flip]");
  std::optional<ImageSize> fixed;  // the size the pipeline has reached, when it no longer depends on the image
  for (size_t i = 0; i < (steps.is_array() ? steps.size() : 0); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const nlohmann::json& item = steps[i];
    std::string name;
    nlohmann::json options = nlohmann::json::object();
    if (item.is_string()) {
      name = item.get<std::string>();
    } else if (item.is_object() && item.size() == 1) {
      name = item.begin().key();
      if (!item.begin().value().is_null()) options = item.begin().value();
    } else {
      throw std::invalid_argument(at + ": expected a transform's name or {name: options}, got '" +
                                  OptionReader::shown(item) + "'");
    }
    const auto& names = image_transform_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw std::invalid_argument(at + ": " + unknown_name("transform", name, names));
    std::string here = at;  // "t[0].resize": where this step's options are
    here.append(".").append(name);
    Step step{};
    step.scale[0] = 0.08, step.scale[1] = 1.0, step.ratio[0] = 3.0 / 4.0, step.ratio[1] = 4.0 / 3.0, step.p = 0.5;
    if ((name == "resize" || name == "center_crop") && !options.is_object()) {
      options = nlohmann::json{{"size", options}};  // {resize: 256}: the size itself
    }
    OptionReader r(here, options);
    if (name == "random_resized_crop") {
      step.kind = Step::Kind::kRandomResizedCrop;
      r.check_keys({"size", "scale", "ratio"});
      step.size = r.has("size") ? read_size(r.json()["size"], here + ".size") : ImageSize{image_size, image_size};
      if (r.has("scale")) read_range(r.json()["scale"], step.scale, here + ".scale");
      if (step.scale[1] > 1) throw std::invalid_argument(here + ".scale: at most 1 (the whole image)");
      if (r.has("ratio")) read_range(r.json()["ratio"], step.ratio, here + ".ratio");
      fixed = step.size;
    } else if (name == "resize" || name == "center_crop") {
      step.kind = name == "resize" ? Step::Kind::kResize : Step::Kind::kCenterCrop;
      r.check_keys({"size"});
      const nlohmann::json size = r.has("size") ? r.json()["size"] : nlohmann::json();
      step.size = size.is_null() ? ImageSize{image_size, image_size} : read_size(size, here);
      const bool shorter_side = step.kind == Step::Kind::kResize && !size.is_array() && !size.is_null();
      if (shorter_side) {
        step.size.height = 0;
        fixed.reset();
      } else {
        fixed = step.size;
      }
    } else {
      step.kind = Step::Kind::kHorizontalFlip;
      r.read("p", step.p);
      if (step.p < 0 || step.p > 1) r.fail("p", "expected a probability from 0 to 1");
      r.finish();
    }
    t.impl_->steps_.push_back(step);
  }
  if (t.impl_->steps_.empty()) {
    t.impl_->steps_.push_back(Step{Step::Kind::kResize, {image_size, image_size}});
    fixed = ImageSize{image_size, image_size};
  }
  if (!fixed || *fixed != ImageSize{image_size, image_size}) {
    const std::string side = std::to_string(image_size);
    throw std::invalid_argument(
        where + ": the pipeline must end at image_size (" + side + "x" + side + ")" +
        (fixed ? ", not " + size_text(*fixed) : ": end it with a crop, e.g. {center_crop: " + side + "}"));
  }
  return t;
}

bool ImageTransforms::random() const {
  return std::any_of(impl_->steps_.begin(), impl_->steps_.end(), [](const Step& s) {
    return s.kind == Step::Kind::kRandomResizedCrop || (s.kind == Step::Kind::kHorizontalFlip && s.p > 0);
  });
}

ImagePlan ImageTransforms::plan(ImageSize source, ExampleRng& rng) const {
  ImagePlan plan;
  plan.region = {0, 0, static_cast<double>(source.height), static_cast<double>(source.width)};
  ImageSize current = source;
  // Takes [top, top + h) x [left, left + w) of the current image, which then has size `out`.
  auto take = [&](double top, double left, double h, double w, ImageSize out) {
    if (plan.flip) left = static_cast<double>(current.width) - left - w;  // counted from the mirrored side
    const double sy = plan.region.height / static_cast<double>(current.height);
    const double sx = plan.region.width / static_cast<double>(current.width);
    plan.region = {plan.region.top + top * sy, plan.region.left + left * sx, h * sy, w * sx};
    current = out;
  };
  for (const Step& step : impl_->steps_) {
    switch (step.kind) {
      case Step::Kind::kResize: {
        ImageSize out = step.size;
        if (out.height == 0) {  // the shorter side to size.width, as torchvision's int() of the longer
          const int64_t side = step.size.width;
          out = current.height <= current.width
                    ? ImageSize{side, static_cast<int64_t>(static_cast<double>(side) * current.width / current.height)}
                    : ImageSize{static_cast<int64_t>(static_cast<double>(side) * current.height / current.width), side};
        }
        take(0, 0, static_cast<double>(current.height), static_cast<double>(current.width), out);
        break;
      }
      case Step::Kind::kCenterCrop: {
        if (step.size.height > current.height || step.size.width > current.width) {
          throw ImageError("an image of " + size_text(current) + " is smaller than center_crop's " +
                           size_text(step.size));
        }
        const double top = std::nearbyint(static_cast<double>(current.height - step.size.height) /
                                          2.0);  // ties to even, as Python's round
        const double left = std::nearbyint(static_cast<double>(current.width - step.size.width) / 2.0);
        take(top, left, static_cast<double>(step.size.height), static_cast<double>(step.size.width), step.size);
        break;
      }
      case Step::Kind::kRandomResizedCrop: {  // torchvision's RandomResizedCrop.get_params
        const double area = static_cast<double>(current.height * current.width);
        const double log_low = std::log(step.ratio[0]), log_high = std::log(step.ratio[1]);
        bool found = false;
        for (int attempt = 0; attempt < 10 && !found; ++attempt) {
          const double target = area * rng.uniform(step.scale[0], step.scale[1]);
          const double aspect = std::exp(rng.uniform(log_low, log_high));
          const auto w = static_cast<int64_t>(std::lround(std::sqrt(target * aspect)));
          const auto h = static_cast<int64_t>(std::lround(std::sqrt(target / aspect)));
          if (w > 0 && h > 0 && w <= current.width && h <= current.height) {
            const auto top = static_cast<int64_t>(rng.uniform(0, static_cast<double>(current.height - h + 1)));
            const auto left = static_cast<int64_t>(rng.uniform(0, static_cast<double>(current.width - w + 1)));
            take(static_cast<double>(top), static_cast<double>(left), static_cast<double>(h), static_cast<double>(w),
                 step.size);
            found = true;
          }
        }
        if (!found) {  // the central crop of the nearest allowed aspect ratio
          const double ratio = static_cast<double>(current.width) / static_cast<double>(current.height);
          int64_t w = current.width, h = current.height;
          if (ratio < step.ratio[0]) {
            h = static_cast<int64_t>(std::lround(static_cast<double>(w) / step.ratio[0]));
          } else if (ratio > step.ratio[1]) {
            w = static_cast<int64_t>(std::lround(static_cast<double>(h) * step.ratio[1]));
          }
          take(std::floor(static_cast<double>(current.height - h) / 2),
               std::floor(static_cast<double>(current.width - w) / 2), static_cast<double>(h), static_cast<double>(w),
               step.size);
        }
        break;
      }
      case Step::Kind::kHorizontalFlip:
        if (rng.uniform(0, 1) < step.p) plan.flip = !plan.flip;
        break;
    }
  }
  plan.out = current;
  return plan;
}

namespace {

// A resampled value (a sum of non-negative weights times bytes) as a byte, rounded half away from
// zero as std::lround rounds a non-negative value.
inline uint8_t to_byte(float v) { return static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, v) + 0.5f)); }

// Four floats, one vector register: a pixel's R, G, B and a spare lane.
using Float4 = float __attribute__((vector_size(16)));

// `quads` holds columns from `col_lo` on as RGBx (4 floats a pixel), and `W` more of zeros past its
// last: every output pixel sums W taps (those past its count weigh 0), each tap one vector product
// and sum for its three channels, in the order of the scalar sums (the same floats, bit for bit).
template <int W>
void horizontal_rgb(const Float4* quads, const Taps& cols, int64_t col_lo, int64_t out_w, float* out) {
  for (int64_t o = 0; o < out_w; ++o) {
    const float* w = &cols.weights[o * W];
    const Float4* px = quads + (cols.first[o] - col_lo);
    Float4 sum = {0, 0, 0, 0};
    for (int k = 0; k < W; ++k) sum += w[k] * px[k];
    out[3 * o] = sum[0];
    out[3 * o + 1] = sum[1];
    out[3 * o + 2] = sum[2];
  }
}

void horizontal_rgb_any(const float* line, const Taps& cols, int64_t col_lo, int64_t out_w, float* out) {
  for (int64_t o = 0; o < out_w; ++o) {
    const float* w = &cols.weights[o * cols.width];
    const float* px = line + (cols.first[o] - col_lo) * 3;
    float r = 0, g = 0, b = 0;
    for (int64_t k = 0; k < cols.count[o]; ++k) {
      r += w[k] * px[3 * k];
      g += w[k] * px[3 * k + 1];
      b += w[k] * px[3 * k + 2];
    }
    out[3 * o] = r;
    out[3 * o + 1] = g;
    out[3 * o + 2] = b;
  }
}

void horizontal_gray(const float* line, const Taps& cols, int64_t col_lo, int64_t out_w, float* out) {
  for (int64_t o = 0; o < out_w; ++o) {
    const float* w = &cols.weights[o * cols.width];
    const float* px = line + (cols.first[o] - col_lo);
    float sum = 0;
    for (int64_t k = 0; k < cols.count[o]; ++k) sum += w[k] * px[k];
    out[o] = sum;
  }
}

// `quads`: the line as RGBx, for the fixed tap counts (3, 5, 7: the common shrinks and stretches of
// a crop to the output); filled here from `line`.
void horizontal(int channels, const float* line, std::vector<Float4>& quads, const Taps& cols, int64_t col_lo,
                int64_t out_w, float* out) {
  if (channels == 1) return horizontal_gray(line, cols, col_lo, out_w, out);
  if (cols.width != 3 && cols.width != 5 && cols.width != 7) return horizontal_rgb_any(line, cols, col_lo, out_w, out);
  for (size_t i = 0; i < quads.size(); ++i) quads[i] = Float4{line[3 * i], line[3 * i + 1], line[3 * i + 2], 0};
  if (cols.width == 3) return horizontal_rgb<3>(quads.data(), cols, col_lo, out_w, out);
  if (cols.width == 5) return horizontal_rgb<5>(quads.data(), cols, col_lo, out_w, out);
  return horizontal_rgb<7>(quads.data(), cols, col_lo, out_w, out);
}

}  // namespace

void render_image(std::string_view bytes, const std::string& name, int channels, const ImagePlan& plan,
                  at::Tensor& out) {
  const image_detail::Decoded decoded = image_detail::decode_region(bytes, name, channels, plan.region, plan.out);
  const int64_t in_h = decoded.pixels.size(0), in_w = decoded.pixels.size(1);
  const int64_t out_h = plan.out.height, out_w = plan.out.width;
  const Taps rows =
      make_taps((plan.region.top - decoded.top) / decoded.step_y, plan.region.height / decoded.step_y, out_h, in_h);
  const Taps cols =
      make_taps((plan.region.left - decoded.left) / decoded.step_x, plan.region.width / decoded.step_x, out_w, in_w);
  const auto* in = decoded.pixels.data_ptr<uint8_t>();
  auto* dst = out.data_ptr<uint8_t>();
  const int64_t out_row_stride = out.stride(0), out_col_stride = out.stride(1);
  // Vertical pass first, over the columns the horizontal pass reads (a contiguous span of bytes a
  // row: the inner loop is vectorised), into one row of floats per output row; then the horizontal
  // pass over those out_h rows only, each output pixel's channels summed together.
  const int64_t col_lo = cols.first.front();
  const int64_t col_hi = cols.first.back() + cols.count.back();
  const int64_t span = (col_hi - col_lo) * channels;
  std::vector<float> down(span + cols.width * channels, 0.0f);  // zeros past the span: horizontal()
  std::vector<float> across(out_w * channels);
  std::vector<Float4> quads(channels == 3 ? down.size() / 3 : 0);
  std::vector<uint8_t> row_bytes(out_w * channels);
  for (int64_t o = 0; o < out_h; ++o) {
    const float* w = &rows.weights[o * rows.width];
    std::fill(down.begin(), down.begin() + span, 0.0f);
    for (int64_t k = 0; k < rows.count[o]; ++k) {
      const float wk = w[k];
      const uint8_t* src = in + ((rows.first[o] + k) * in_w + col_lo) * channels;
      float* acc = down.data();
      for (int64_t i = 0; i < span; ++i) acc[i] += wk * static_cast<float>(src[i]);
    }
    horizontal(channels, down.data(), quads, cols, col_lo, out_w, across.data());
    for (int64_t i = 0; i < out_w * channels; ++i) row_bytes[i] = to_byte(across[i]);  // branch-free: vectorised
    uint8_t* line = dst + o * out_row_stride;
    if (!plan.flip && out_col_stride == channels) {
      std::memcpy(line, row_bytes.data(), row_bytes.size());
      continue;
    }
    for (int64_t x = 0; x < out_w; ++x) {
      uint8_t* px = line + (plan.flip ? out_w - 1 - x : x) * out_col_stride;
      for (int c = 0; c < channels; ++c) px[c] = row_bytes[x * channels + c];
    }
  }
}

}  // namespace baton
