#include "baton/data/image_folder.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/io/file.h"
#include "baton/io/text.h"
#include "data/image_pipeline.h"

namespace baton {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxDepth = 16;               // folders inside a class folder
constexpr int64_t kMaxFiles = 100'000'000;  // examples in one data set
constexpr size_t kMaxListLine = 64 << 10;   // bytes in one line of a CSV list

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

}  // namespace

struct ImageFolder::Impl {
  std::unique_ptr<image_detail::ImagePipeline> pipeline_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  std::vector<ImageSize> sizes_;
};

int64_t ImageFolder::num_classes() const { return static_cast<int64_t>(impl_->classes_.size()); }
std::vector<std::string> ImageFolder::class_names() const { return impl_->classes_; }
const std::vector<std::string>& ImageFolder::classes() const { return impl_->classes_; }
const std::vector<std::string>& ImageFolder::files() const { return impl_->files_; }
const std::vector<int64_t>& ImageFolder::labels() const { return impl_->labels_; }

std::shared_ptr<ImageFolder> ImageFolder::from_dir(const std::string& dir, ImageFolderOptions options,
                                                   std::vector<std::string> classes) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    const std::string kind = file_kind(dir);
    throw ImageError(dir + ": " + kind + ", not a folder of class folders" +
                     (kind == "nothing" ? where_relative(dir) : std::string()));
  }
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(error) || name[0] == '.') continue;
    if (name.find_first_of("\r\n") != std::string::npos)
      throw ImageError(one_line(entry.path().string()) +
                       ": a class folder whose name holds a line break (classes.txt has a line a class)");
    if (valid_utf8_prefix(name) != name.size()) {  // a class name goes into checkpoints, JSON and classes.txt
      throw ImageError(one_line(entry.path().string()) +
                       ": a class folder whose name is not UTF-8; rename it (convmv -f latin1 -t utf8 -r --notest)");
    }
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
    if (trimmed(line).empty()) continue;
    const size_t comma = line.rfind(',');
    if (comma == std::string::npos) throw ImageError(where + ": expected path,label, got '" + one_line(line, 80) + "'");
    const std::string path = trimmed(line.substr(0, comma)), label = trimmed(line.substr(comma + 1));
    if (number == 1 && path == "path" && label == "label") continue;  // a header
    int64_t value = -1;
    if (label.empty() || label.size() > 9 || label.find_first_not_of("0123456789") != std::string::npos ||
        (value = std::stoll(label)) < 0) {
      throw ImageError(where + ": the label '" + one_line(label, 40) + "' is not a class index (0, 1, ...)");
    }
    if (value >= kMaxClasses) {  // a label makes that many class names
      std::string why = where;
      throw ImageError(why.append(": the label ").append(label).append(" is more than 1,000,000 classes can have"));
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
    : impl_(std::make_unique<Impl>()) {
  impl_->pipeline_ = std::make_unique<image_detail::ImagePipeline>(std::move(options));
  impl_->classes_ = std::move(classes);
  impl_->files_ = std::move(files);
  impl_->labels_ = std::move(labels);
  check_headers(origin);
}

ImageFolder::~ImageFolder() = default;

// Reads every file's header (on the decode threads): its size for the plans, and a file that is not
// an image found before training. With bad_files: skip, such files leave the examples.
void ImageFolder::check_headers(const std::string& origin) {
  const auto n = static_cast<int64_t>(impl_->files_.size());
  impl_->sizes_.assign(n, ImageSize{});
  std::vector<std::string> errors(n);
  impl_->pipeline_->run(n, [&](int64_t i) {
    try {
      // The header is in the first bytes; reading the whole file costs little more and checks it is regular.
      impl_->sizes_[i] = image_size(read_image_file(impl_->files_[i]), impl_->files_[i]);
      impl_->pipeline_->check_plan(impl_->sizes_[i], impl_->files_[i],
                                   i);  // smaller than a crop: found now, not mid-run
    } catch (const ImageError& e) {
      if (options().bad_files() == BadFiles::kError) throw;
      errors[i] = e.what();
    }
  });
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  std::vector<ImageSize> sizes;
  for (int64_t i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      impl_->pipeline_->report_skip(errors[i]);
      continue;
    }
    files.push_back(std::move(impl_->files_[i]));
    labels.push_back(impl_->labels_[i]);
    sizes.push_back(impl_->sizes_[i]);
  }
  impl_->pipeline_->warn_skipped(origin, n);
  if (files.empty()) throw ImageError(origin + ": no readable images");
  impl_->files_ = std::move(files), impl_->labels_ = std::move(labels), impl_->sizes_ = std::move(sizes);
}

int64_t ImageFolder::size() const { return static_cast<int64_t>(impl_->files_.size()); }

const ImageFolderOptions& ImageFolder::options() const { return impl_->pipeline_->options(); }

std::vector<int64_t> ImageFolder::input_shape() const { return impl_->pipeline_->input_shape(); }

std::vector<std::string> ImageFolder::skipped() const { return impl_->pipeline_->skipped(); }

void ImageFolder::render(int64_t index, int64_t epoch, at::Tensor& out) const {
  const std::string& file = impl_->files_[index];
  impl_->pipeline_->render(read_image_file(file), file, impl_->sizes_[index], index, epoch, out);
}

Batch ImageFolder::get_batch(const at::Tensor& indices) const { return get_epoch_batch(indices, 0); }

Batch ImageFolder::get_epoch_batch(const at::Tensor& indices, int64_t epoch) const {
  return impl_->pipeline_->batch(indices, size(), [&](int64_t id, at::Tensor& out) {
    render(id, epoch, out);
    return impl_->labels_[id];
  });
}

at::Tensor ImageFolder::finish_inputs(const at::Tensor& inputs) const {
  return impl_->pipeline_->finish_inputs(inputs);
}

}  // namespace baton
