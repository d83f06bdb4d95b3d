#include "baton/data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/io/file.h"

namespace baton {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxDepth = 16;               // folders inside a class folder
constexpr int64_t kMaxFiles = 100'000'000;  // examples in one data set
constexpr size_t kMaxListLine = 64 << 10;   // bytes in one line of a CSV list
constexpr size_t kShownSkips = 5;           // skipped files named in a warning

bool is_image_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// The image files under `dir` (links followed, at most kMaxDepth folders deep), sorted.
std::vector<std::string> image_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code error;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, error);
  if (error) throw ImageError(dir.string() + ": cannot be listed (" + error.message() + ")");
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) throw ImageError(dir.string() + ": cannot be listed (" + error.message() + ")");
    if (it.depth() > kMaxDepth) throw ImageError(it->path().string() + ": more than 16 folders deep");
    if (it->is_regular_file(error) && is_image_name(it->path())) files.push_back(it->path().string());
    if (static_cast<int64_t>(files.size()) > kMaxFiles)
      throw ImageError(dir.string() + ": more than 100,000,000 images");
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

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
struct ImageFolder::Pool {
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
  // Files skipped while decoding (bad_files: skip), for skipped().
  std::mutex skipped_mutex;
  std::vector<std::string> skipped;
};

std::shared_ptr<ImageFolder> ImageFolder::from_dir(const std::string& dir, ImageFolderOptions options,
                                                   std::vector<std::string> classes) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw ImageError(dir + ": " + file_kind(dir) + ", not a folder of class folders");
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(error) || name[0] == '.') continue;
    if (name.find_first_of("\r\n") != std::string::npos)
      throw ImageError(entry.path().string() +
                       ": a class folder whose name holds a line break (classes.txt has a line a class)");
    found.push_back(name);
  }
  if (error) throw ImageError(dir + ": cannot be listed (" + error.message() + ")");
  std::sort(found.begin(), found.end());
  if (found.empty()) throw ImageError(dir + ": no class folders (ImageNet's layout: " + dir + "/CLASS/IMAGE.jpg)");
  if (classes.empty()) classes = found;
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  for (const std::string& name : found) {
    const auto it = std::find(classes.begin(), classes.end(), name);
    const std::string folder = (fs::path(dir) / name).string();
    if (it == classes.end()) throw ImageError(folder + ": a class the training set does not have");
    const std::vector<std::string> in_class = image_files(fs::path(dir) / name);
    if (in_class.empty()) throw ImageError(folder + ": a class folder with no .jpg, .jpeg or .png files");
    files.insert(files.end(), in_class.begin(), in_class.end());
    labels.insert(labels.end(), in_class.size(), it - classes.begin());
  }
  return std::shared_ptr<ImageFolder>(
      new ImageFolder(std::move(options), std::move(classes), std::move(files), std::move(labels), dir));
}

std::shared_ptr<ImageFolder> ImageFolder::from_list(const std::string& list, ImageFolderOptions options,
                                                    std::vector<std::string> classes) {
  std::string text;
  try {
    text = read_file(list, {.what = "the list", .max_bytes = 4ull << 30});
  } catch (const FileError& e) {
    throw ImageError(e.what());
  }
  const fs::path base = fs::path(list).parent_path();
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  std::istringstream in(text);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const std::string where = list + ":" + std::to_string(number);
    if (line.size() > kMaxListLine) throw ImageError(where + ": a line longer than 64 KiB");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const size_t comma = line.rfind(',');
    if (comma == std::string::npos) throw ImageError(where + ": expected path,label, got '" + line.substr(0, 80) + "'");
    const std::string path = trim(line.substr(0, comma)), label = trim(line.substr(comma + 1));
    if (number == 1 && path == "path" && label == "label") continue;  // a header
    int64_t value = -1;
    if (label.empty() || label.size() > 9 || label.find_first_not_of("0123456789") != std::string::npos ||
        (value = std::stoll(label)) < 0) {
      throw ImageError(where + ": the label '" + label.substr(0, 40) + "' is not a class index (0, 1, ...)");
    }
    if (path.empty()) throw ImageError(where + ": an empty path");
    files.push_back(fs::path(path).is_absolute() ? path : (base / path).string());
    labels.push_back(value);
    if (static_cast<int64_t>(files.size()) > kMaxFiles) throw ImageError(list + ": more than 100,000,000 images");
  }
  if (files.empty()) throw ImageError(list + ": lists no images (one path,label a line)");
  const int64_t count = *std::max_element(labels.begin(), labels.end()) + 1;
  if (classes.empty()) {
    for (int64_t c = 0; c < count; ++c) classes.push_back(std::to_string(c));
  } else if (count > static_cast<int64_t>(classes.size())) {
    throw ImageError(list + ": label " + std::to_string(count - 1) + " but the training set has " +
                     std::to_string(classes.size()) + " classes");
  }
  return std::shared_ptr<ImageFolder>(
      new ImageFolder(std::move(options), std::move(classes), std::move(files), std::move(labels), list));
}

std::shared_ptr<ImageFolder> ImageFolder::from_files(const std::string& path, ImageFolderOptions options,
                                                     std::vector<std::string> classes) {
  std::error_code error;
  std::vector<std::string> files;
  if (fs::is_directory(path, error)) {
    files = image_files(path);
    if (files.empty()) throw ImageError(path + ": a folder with no .jpg, .jpeg or .png files");
  } else if (fs::is_regular_file(path, error)) {
    files.push_back(path);
  } else {
    throw ImageError(path + ": " + file_kind(path) + ", not an image file or a folder of them");
  }
  std::vector<int64_t> labels(files.size(), 0);
  options.transforms(options.eval_transforms()).where("eval_transforms");
  return std::shared_ptr<ImageFolder>(
      new ImageFolder(std::move(options), std::move(classes), std::move(files), std::move(labels), path));
}

ImageFolder::ImageFolder(ImageFolderOptions options, std::vector<std::string> classes, std::vector<std::string> files,
                         std::vector<int64_t> labels, const std::string& origin)
    : options_(std::move(options)),
      transforms_(ImageTransforms::parse(options_.transforms(), options_.image_size(), options_.where())),
      classes_(std::move(classes)),
      files_(std::move(files)),
      labels_(std::move(labels)) {
  const int channels = options_.channels();
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("channels must be 1 or 3, got " + std::to_string(channels));
  if (options_.image_size() < 1 || options_.image_size() > 65535)
    throw std::invalid_argument("image_size must be from 1 to 65535, got " + std::to_string(options_.image_size()));
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
  check_headers(origin);
}

ImageFolder::~ImageFolder() = default;

// Reads every file's header (on the decode threads): its size for the plans, and a file that is not
// an image found before training. With bad_files: skip, such files leave the examples.
void ImageFolder::check_headers(const std::string& origin) {
  const auto n = static_cast<int64_t>(files_.size());
  sizes_.assign(n, ImageSize{});
  std::vector<std::string> errors(n);
  pool_->run(n, [&](int64_t i) {
    try {
      // The header is in the first bytes; reading the whole file costs little more and checks it is regular.
      sizes_[i] = image_size(read_image_file(files_[i]), files_[i]);
    } catch (const ImageError& e) {
      if (options_.bad_files() == BadFiles::kError) throw;
      errors[i] = e.what();
    }
  });
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  std::vector<ImageSize> sizes;
  for (int64_t i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      pool_->skipped.push_back(errors[i]);
      continue;
    }
    files.push_back(std::move(files_[i]));
    labels.push_back(labels_[i]);
    sizes.push_back(sizes_[i]);
  }
  if (!pool_->skipped.empty()) {
    std::string shown;
    for (size_t i = 0; i < std::min(kShownSkips, pool_->skipped.size()); ++i) shown += "\n  " + pool_->skipped[i];
    spdlog::warn("{}: skipped {} of {} files that are not readable images (bad_files: skip):{}{}", origin,
                 pool_->skipped.size(), n, shown, pool_->skipped.size() > kShownSkips ? "\n  ..." : "");
  }
  if (files.empty()) throw ImageError(origin + ": no readable images");
  files_ = std::move(files), labels_ = std::move(labels), sizes_ = std::move(sizes);
}

int64_t ImageFolder::size() const { return static_cast<int64_t>(files_.size()); }

std::vector<int64_t> ImageFolder::input_shape() const {
  return {options_.channels(), options_.image_size(), options_.image_size()};
}

std::vector<std::string> ImageFolder::skipped() const {
  std::lock_guard<std::mutex> lock(pool_->skipped_mutex);
  return pool_->skipped;
}

void ImageFolder::render(int64_t index, int64_t epoch, at::Tensor& out) const {
  const std::string& file = files_[index];
  ExampleRng rng(options_.seed(), epoch, index);
  ImagePlan plan;
  try {
    plan = transforms_.plan(sizes_[index], rng);
  } catch (const ImageError& e) {
    throw ImageError(file + ": " + e.what());
  }
  render_image(read_image_file(file), file, options_.channels(), plan, out);
}

Batch ImageFolder::get_batch(const at::Tensor& indices) const { return get_epoch_batch(indices, 0); }

Batch ImageFolder::get_epoch_batch(const at::Tensor& indices, int64_t epoch) const {
  const at::Tensor index = indices.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t n = index.numel(), side = options_.image_size(), channels = options_.channels();
  at::Tensor pixels = at::empty({n, side, side, channels}, at::kByte);
  at::Tensor targets = at::empty({n}, at::kLong);
  const int64_t* ids = index.data_ptr<int64_t>();
  int64_t* labels = targets.data_ptr<int64_t>();
  pool_->run(n, [&](int64_t i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= size()) throw std::out_of_range("ImageFolder: index " + std::to_string(id) + " out of range");
    at::Tensor out = pixels[i];
    for (int64_t tries = 0;; ++tries) {  // with bad_files: skip, the next example stands in
      const int64_t example = (id + tries) % size();
      try {
        render(example, epoch, out);
        labels[i] = labels_[example];
        return;
      } catch (const ImageError& e) {
        if (options_.bad_files() == BadFiles::kError || tries + 1 >= size()) throw;
        std::lock_guard<std::mutex> lock(pool_->skipped_mutex);
        pool_->skipped.push_back(e.what());
        spdlog::warn("{} (bad_files: skip: example {} stands in)", e.what(), (example + 1) % size());
      }
    }
  });
  return {pixels.permute({0, 3, 1, 2}), targets};
}

at::Tensor ImageFolder::finish_inputs(const at::Tensor& inputs) const {
  if (inputs.scalar_type() != at::kByte) return inputs;
  const at::Tensor mean = mean_.to(inputs.device()), std = std_.to(inputs.device());
  return inputs.to(torch::kFloat).sub_(mean).div_(std).contiguous(at::MemoryFormat::ChannelsLast);
}

}  // namespace baton
