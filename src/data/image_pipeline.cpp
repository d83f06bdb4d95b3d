#include "data/image_pipeline.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

namespace baton::image_detail {
namespace {

constexpr size_t kShownSkips = 5;  // skipped files named in a warning

std::vector<double> per_channel(std::vector<double> values, int channels, const char* key, const std::string& where) {
  if (values.size() == 1) values.assign(channels, values[0]);
  if (static_cast<int>(values.size()) != channels)
    throw std::invalid_argument(where + ": normalize." + key + " has " + std::to_string(values.size()) +
                                " values for " + std::to_string(channels) + " channels");
  return values;
}

}  // namespace

// The decode threads: run(n, f) calls f(0) ... f(n - 1) on the workers and the caller, and returns
// when all are done (rethrowing the first exception).
struct ImagePipeline::Pool {
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    for (auto& t : workers) t.join();
  }

  void run(int64_t n, const std::function<void(int64_t)>& f) {
    std::lock_guard<std::mutex> serial(running);  // one batch at a time
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = &f, total = n, next = 0, active = static_cast<int>(workers.size()), error = nullptr;
      ++generation;
    }
    wake.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return active == 0; });
    job = nullptr;
    if (error) std::rethrow_exception(error);
  }

 private:
  void work() {
    for (int64_t i; (i = next.fetch_add(1)) < total;) {
      try {
        (*job)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next = total;  // the rest is not needed
      }
    }
  }
  void loop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping) return;
      seen = generation;
      lock.unlock();
      work();
      lock.lock();
      if (--active == 0) done.notify_all();
    }
  }

  std::vector<std::thread> workers;
  std::mutex running, mutex;
  std::condition_variable wake, done;
  const std::function<void(int64_t)>* job = nullptr;
  std::atomic<int64_t> next{0};
  int64_t total = 0;
  int active = 0;
  uint64_t generation = 0;
  bool stopping = false;
  std::exception_ptr error;

 public:
  // What was skipped (bad_files: skip), for skipped().
  std::mutex skipped_mutex;
  std::vector<std::string> skipped;
};

ImagePipeline::ImagePipeline(ImageFolderOptions options)
    : options_(std::move(options)),
      transforms_(ImageTransforms::parse(options_.transforms(), options_.image_size(), options_.where())) {
  const int channels = options_.channels();
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("channels must be 1 or 3, got " + std::to_string(channels));
  if (options_.image_size() < 1 || options_.image_size() > kMaxImageSide) {
    throw std::invalid_argument("image_size must be from 1 to " + std::to_string(kMaxImageSide) + ", got " +
                                std::to_string(options_.image_size()));
  }
  std::vector<double> mean = options_.mean(), std = options_.std();
  if (mean.empty()) mean = channels == 3 ? std::vector<double>{0.485, 0.456, 0.406} : std::vector<double>{0.5};
  if (std.empty()) std = channels == 3 ? std::vector<double>{0.229, 0.224, 0.225} : std::vector<double>{0.5};
  mean = per_channel(mean, channels, "mean", options_.where());
  std = per_channel(std, channels, "std", options_.where());
  for (double s : std) {
    if (!(s > 0 && std::isfinite(s))) throw std::invalid_argument("normalize.std: every value must be positive");
  }
  mean_ = torch::tensor(mean, torch::kFloat).mul_(255).view({1, channels, 1, 1});
  std_ = torch::tensor(std, torch::kFloat).mul_(255).view({1, channels, 1, 1});
  const int threads =
      options_.workers() > 0 ? options_.workers() : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pool_ = std::make_unique<Pool>(std::min(threads, 256));
}

ImagePipeline::~ImagePipeline() = default;

void ImagePipeline::run(int64_t n, const std::function<void(int64_t)>& f) const { pool_->run(n, f); }

void ImagePipeline::check_plan(ImageSize size, const std::string& name, int64_t index) const {
  ExampleRng rng(options_.seed(), 0, index);
  try {
    transforms_.plan(size, rng);
  } catch (const ImageError& e) {
    const std::string why = e.what();
    throw ImageError(why.rfind(name + ": ", 0) == 0 ? why : name + ": " + why);
  }
}

void ImagePipeline::render(std::string_view bytes, const std::string& name, std::optional<ImageSize> size,
                           int64_t index, int64_t epoch, at::Tensor& out) const {
  ExampleRng rng(options_.seed(), epoch, index);
  ImagePlan plan;
  try {
    plan = transforms_.plan(size ? *size : image_size(bytes, name), rng);
  } catch (const ImageError& e) {
    const std::string why = e.what();
    throw ImageError(why.rfind(name + ": ", 0) == 0 ? why : name + ": " + why);
  }
  render_image(bytes, name, options_.channels(), plan, out);
}

Batch ImagePipeline::batch(const at::Tensor& indices, int64_t count,
                           const std::function<int64_t(int64_t id, at::Tensor& out)>& example) const {
  const at::Tensor index = indices.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t n = index.numel(), side = options_.image_size(), channels = options_.channels();
  at::Tensor pixels = at::empty({n, side, side, channels}, at::kByte);
  at::Tensor targets = at::empty({n}, at::kLong);
  const int64_t* ids = index.data_ptr<int64_t>();
  int64_t* labels = targets.data_ptr<int64_t>();
  run(n, [&](int64_t i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= count) throw std::out_of_range("images: index " + std::to_string(id) + " out of range");
    at::Tensor out = pixels[i];
    for (int64_t tries = 0;; ++tries) {  // with bad_files: skip, the next example stands in
      const int64_t at = (id + tries) % count;
      try {
        labels[i] = example(at, out);
        return;
      } catch (const ImageError& e) {
        if (options_.bad_files() == BadFiles::kError || tries + 1 >= count) throw;
        report_skip(e.what());
        spdlog::warn("{} (bad_files: skip: example {} stands in)", e.what(), (at + 1) % count);
      }
    }
  });
  return {pixels.permute({0, 3, 1, 2}), targets};
}

at::Tensor ImagePipeline::finish_inputs(const at::Tensor& inputs) const {
  if (inputs.scalar_type() != at::kByte) return inputs;
  const at::Tensor mean = mean_.to(inputs.device()), std = std_.to(inputs.device());
  return inputs.to(torch::kFloat).sub_(mean).div_(std).contiguous(at::MemoryFormat::ChannelsLast);
}

std::vector<int64_t> ImagePipeline::input_shape() const {
  return {options_.channels(), options_.image_size(), options_.image_size()};
}

void ImagePipeline::report_skip(std::string why) const {
  std::lock_guard<std::mutex> lock(pool_->skipped_mutex);
  pool_->skipped.push_back(std::move(why));
}

std::vector<std::string> ImagePipeline::skipped() const {
  std::lock_guard<std::mutex> lock(pool_->skipped_mutex);
  return pool_->skipped;
}

void ImagePipeline::warn_skipped(const std::string& origin, int64_t total, const char* what) const {
  const std::vector<std::string> skips = skipped();
  if (skips.empty()) return;
  std::string shown;
  for (size_t i = 0; i < std::min(kShownSkips, skips.size()); ++i) shown += "\n  " + skips[i];
  spdlog::warn("{}: skipped {} of {} {} that are not readable images (bad_files: skip):{}{}", origin, skips.size(),
               total, what, shown, skips.size() > kShownSkips ? "\n  ..." : "");
}

}  // namespace baton::image_detail
