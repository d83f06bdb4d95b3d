#include "baton/data/text.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/io/file.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

// The file, or the folder's regular files in name order.
std::string read_text(const std::string& path) {
  std::string text;
  for (const std::string& file : text_files(path)) text += read_text_file(file);
  return text;
}

// Token ids of `text` and the vocabulary's size: bytes, or the characters `vocabulary` holds (the
// training text's), in byte order. A character outside them throws, naming `path` and where it is.
std::pair<at::Tensor, int64_t> tokenize(const std::string& text, TextTokens kind, const std::string& vocabulary,
                                        const std::string& path) {
  at::Tensor bytes =
      torch::from_blob(const_cast<char*>(text.data()), {static_cast<int64_t>(text.size())}, torch::kUInt8)
          .to(torch::kLong);
  if (kind == TextTokens::kBytes) return {bytes, 256};
  std::array<int64_t, 256> id{};
  for (unsigned char c : vocabulary) id[c] = 1;
  int64_t vocab = 0;
  for (auto& v : id) v = v ? vocab++ : -1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (id[static_cast<unsigned char>(text[i])] < 0) {
      throw std::runtime_error(path + ": byte " + std::to_string(i) + " is character " +
                               std::to_string(static_cast<unsigned char>(text[i])) +
                               ", which the training text never has (set tokens: bytes)");
    }
  }
  const at::Tensor table = torch::tensor(std::vector<int64_t>(id.begin(), id.end()), torch::kLong);
  return {table.index_select(0, bytes), vocab};
}

}  // namespace

std::vector<std::string> text_files(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw std::runtime_error(
        path + ": no such file or folder" +
        (path == kDefaultTextPath ? " (install Debian's fortunes package)" : where_relative(path)));
  }
  if (!fs::is_directory(status)) return {path};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.is_symlink() || !entry.is_regular_file() || entry.path().extension() == ".dat") continue;
    files.push_back(entry.path().string());
  }
  if (files.empty()) throw std::runtime_error(path + ": a folder with no text file in it");
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_text_file(const std::string& path) {
  try {
    return read_file(path, {.what = "the text", .max_bytes = kMaxTextBytes});
  } catch (const FileError& e) {
    throw std::runtime_error(e.what());
  }
}

struct TextDataset::Impl {
  at::Tensor tokens_;
  int64_t context_;
  int64_t vocab_;
  bool random_offsets_;
  uint64_t seed_;
};

TextDataset::~TextDataset() = default;

std::vector<int64_t> TextDataset::input_shape() const { return {impl_->context_}; }
int64_t TextDataset::tokens_per_example() const { return impl_->context_; }
int64_t TextDataset::num_classes() const { return impl_->vocab_; }
const at::Tensor& TextDataset::tokens() const { return impl_->tokens_; }

TextDataset::TextDataset(at::Tensor tokens, int64_t context, int64_t vocab, bool random_offsets, uint64_t seed)
    : impl_(std::make_unique<Impl>()) {
  impl_->tokens_ = std::move(tokens);
  impl_->context_ = context;
  impl_->vocab_ = vocab;
  impl_->random_offsets_ = random_offsets;
  impl_->seed_ = seed;
  if (impl_->context_ < 1)
    throw std::invalid_argument("context must be at least 1, got " + std::to_string(impl_->context_));
  if (impl_->tokens_.dim() != 1 || impl_->tokens_.size(0) < impl_->context_ + 1) {
    throw std::invalid_argument("a text of " + std::to_string(impl_->tokens_.numel()) +
                                " tokens is too short for a window of " + std::to_string(impl_->context_) +
                                " tokens and its next token");
  }
}

int64_t TextDataset::size() const { return (impl_->tokens_.size(0) - 1) / impl_->context_; }

c10::Device TextDataset::device() const { return impl_->tokens_.device(); }

std::shared_ptr<TextDataset> TextDataset::to(c10::Device device) const {
  return std::make_shared<TextDataset>(impl_->tokens_.to(device), impl_->context_, impl_->vocab_,
                                       impl_->random_offsets_, impl_->seed_);
}

Batch TextDataset::get_epoch_batch(const at::Tensor& indices, int64_t epoch) const {
  const int64_t last_start = impl_->tokens_.size(0) - 1 - impl_->context_;
  at::Tensor starts = indices.to(torch::kCPU, torch::kLong).contiguous() * impl_->context_;
  if (impl_->random_offsets_) {
    const at::Tensor index = indices.to(torch::kCPU, torch::kLong).contiguous();
    std::vector<int64_t> offsets(static_cast<std::size_t>(index.numel()));
    for (std::size_t e = 0; e < offsets.size(); ++e) {
      offsets[e] = ExampleRng(impl_->seed_, epoch, index.data_ptr<int64_t>()[e]).below(impl_->context_);
    }
    starts = starts + torch::tensor(offsets, torch::kLong);
  }
  const at::Tensor positions =
      (starts.clamp_max(last_start).unsqueeze(1) + torch::arange(impl_->context_ + 1, torch::kLong))
          .to(impl_->tokens_.device());
  const at::Tensor windows =
      impl_->tokens_.index_select(0, positions.flatten()).view({indices.numel(), impl_->context_ + 1});
  Batch batch;
  batch.input = windows.slice(1, 0, impl_->context_).contiguous();
  batch.target = windows.slice(1, 1).contiguous();
  return batch;
}

std::pair<std::shared_ptr<TextDataset>, std::shared_ptr<TextDataset>> load_text(const std::string& path,
                                                                                const TextOptions& options) {
  if (!(options.validation_fraction() > 0 && options.validation_fraction() < 1)) {
    throw OptionError("validation_fraction",
                      "expected a number between 0 and 1, got " + std::to_string(options.validation_fraction()));
  }
  if (options.context() < 1) throw OptionError("context", "must be at least 1");
  const std::string text = read_text(path);
  auto [tokens, vocab] = tokenize(text, options.tokens(), text, path);
  const int64_t n = tokens.size(0);
  const auto valid = static_cast<int64_t>(static_cast<double>(n) * options.validation_fraction());
  if (valid < options.context() + 1 || n - valid < options.context() + 1) {
    throw std::runtime_error(path + ": " + std::to_string(n) + " characters are too few for windows of " +
                             std::to_string(options.context()) + " in both the training and the validation part");
  }
  auto train = std::make_shared<TextDataset>(tokens.slice(0, 0, n - valid).clone(), options.context(), vocab,
                                             /*random_offsets=*/true, options.seed());
  auto validation = std::make_shared<TextDataset>(tokens.slice(0, n - valid).clone(), options.context(), vocab,
                                                  /*random_offsets=*/false, options.seed());
  return {train, validation};
}

std::shared_ptr<TextDataset> load_text_eval(const std::string& path, const std::string& training_path,
                                            const TextOptions& options) {
  if (options.context() < 1) throw OptionError("context", "must be at least 1");
  const std::string vocabulary = options.tokens() == TextTokens::kChars ? read_text(training_path) : std::string();
  auto [tokens, vocab] = tokenize(read_text(path), options.tokens(), vocabulary, path);
  if (tokens.size(0) < options.context() + 1) {
    throw std::runtime_error(path + ": " + std::to_string(tokens.size(0)) + " characters are too few for a window of " +
                             std::to_string(options.context()));
  }
  return std::make_shared<TextDataset>(tokens, options.context(), vocab, /*random_offsets=*/false, options.seed());
}

}  // namespace baton
