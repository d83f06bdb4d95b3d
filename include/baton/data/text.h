// Text as next-token prediction: the characters (or bytes) of a file, cut into windows.
//
//   auto [train, valid] = baton::load_text("/usr/share/games/fortunes", baton::TextOptions().context(256));
//   baton::Batch b = train->get_batch(torch::arange(4));  // input [4, 256], target [4, 256]: input shifted by one
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "baton/core/options.h"
#include "baton/data/dataset.h"

namespace baton {

// chars: each distinct byte of the text is a token (the vocabulary is the bytes that occur,
// sorted); bytes: all 256 byte values are tokens.
enum class TextTokens { kChars, kBytes };
BATON_ENUM_NAMES(TextTokens, {TextTokens::kChars, "chars"}, {TextTokens::kBytes, "bytes"})

class TextOptions {
  // Tokens per window (the model's context).
  BATON_ARG(int64_t, context) = 256;
  BATON_ARG(TextTokens, tokens) = TextTokens::kChars;
  // The last part of the text held out for validation.
  BATON_ARG(double, validation_fraction) = 0.1;
  // Training windows start at a random offset drawn from (seed, epoch, index); validation windows are
  // fixed.
  BATON_ARG(uint64_t, seed) = 0;
};

// Windows of `context` tokens over one token sequence: example i is the window starting near
// i * context (training: plus a random offset below context, drawn from (seed, epoch, index), so a
// resumed run sees the windows an uninterrupted one would; validation: exactly there); its target is the same window
// shifted by one token. size() is the number of windows that cover the sequence once, so an epoch reads the text about
// once.
class TextDataset : public Dataset {
 public:
  ~TextDataset() override;
  // `tokens`: int64 [L] with values below `vocab`. Throws std::invalid_argument when L < context + 1.
  TextDataset(at::Tensor tokens, int64_t context, int64_t vocab, bool random_offsets, uint64_t seed);

  int64_t size() const override;
  Batch get_batch(const at::Tensor& indices) const override { return get_epoch_batch(indices, 0); }
  Batch get_epoch_batch(const at::Tensor& indices, int64_t epoch) const override;
  std::vector<int64_t> input_shape() const override;
  int64_t tokens_per_example() const override;
  int64_t num_classes() const override;
  c10::Device device() const override;
  // The same windows with the tokens on `device` (data.on_device).
  std::shared_ptr<TextDataset> to(c10::Device device) const;
  const at::Tensor& tokens() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The text of `path` (a file, or a folder: its regular files in name order, links and fortune's
// *.dat indexes skipped) as a training and a validation set. Throws std::runtime_error naming the
// path when it cannot be read or is too short for one window in each part, OptionError (naming
// the option) for bad options.
std::pair<std::shared_ptr<TextDataset>, std::shared_ptr<TextDataset>> load_text(const std::string& path,
                                                                                const TextOptions& options = {});
// The whole text of `path` as fixed validation windows in the tokens load_text(training_path) gives:
// an evaluation set beside the training text. Throws std::runtime_error for a character the training
// text never has (chars), naming the path and the byte.
std::shared_ptr<TextDataset> load_text_eval(const std::string& path, const std::string& training_path,
                                            const TextOptions& options = {});

// The files of a text path: the file itself, or a folder's regular files in name order (links and
// fortune's *.dat indexes skipped). Throws std::runtime_error naming the path when it is missing or
// a folder holds no file.
std::vector<std::string> text_files(const std::string& path);
// A text is read into memory whole: at most 2 GiB of it.
inline constexpr std::uint64_t kMaxTextBytes = 2ull << 30;
// One text file, whole (at most kMaxTextBytes). Throws std::runtime_error naming it: missing, not a regular
// file, too large.
std::string read_text_file(const std::string& path);

// Where the recipes' text comes from: Debian's `fortunes` package (about 2.6 MB of English).
inline constexpr const char* kDefaultTextPath = "/usr/share/games/fortunes";

}  // namespace baton
