#include "baton/data/tokenizer.h"

#include <dlfcn.h>
#include <memory>

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "baton/data/text.h"
#include "baton/data/tokens.h"
#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/io/write.h"
#include "data/spm/spm_api.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

// A tokenizer's model file: SentencePiece's are well under a few MiB.
constexpr uint64_t kMaxModelBytes = 256ull << 20;

// The files of every path given.
std::vector<std::string> all_text_files(const std::vector<std::string>& texts) {
  std::vector<std::string> files;
  for (const std::string& path : texts) {
    const std::vector<std::string> inside = text_files(path);
    files.insert(files.end(), inside.begin(), inside.end());
  }
  return files;
}

// Every text opens, is a regular file and is not too large: refused before anything is written.
void check_texts(const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    try {
      const ReadableFile opened(file, {.what = "the text", .max_bytes = kMaxTextBytes});
    } catch (const FileError& e) {
      throw std::runtime_error(e.what());
    }
  }
}

// Lines are handed to SentencePiece in pieces of at most this many bytes when training (its
// max_sentence_length: a longer one it would skip, silently) and when encoding (a 200 MB line would
// take gigabytes inside SentencePiece).
constexpr std::size_t kTrainingPiece = 16384;
constexpr std::size_t kEncodingPiece = 1 << 16;

// The next piece of `line` from `at`: at most `most` bytes, cut after the last space or tab in it
// (else at a character's boundary), so a long line's pieces join back to it exactly.
std::string_view next_piece(std::string_view line, std::size_t at, std::size_t most) {
  std::string_view rest = line.substr(at);
  if (rest.size() <= most) return rest;
  const std::size_t space = rest.substr(0, most).find_last_of(" \t");
  if (space != std::string_view::npos && space > most / 2) return rest.substr(0, space + 1);
  std::size_t cut = most;
  while (cut > 0 && (static_cast<unsigned char>(rest[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
  return rest.substr(0, cut > 0 ? cut : most);
}

// A text SentencePiece reads must be UTF-8: it turns other bytes into U+FFFD, and decoding would not
// give the text back. Throws naming the file, the line and the byte.
void check_utf8(const std::string& text, const std::string& file) {
  const std::size_t valid = valid_utf8_prefix(text);
  if (valid == text.size()) return;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(valid), '\n');
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[valid]));
  throw std::runtime_error(file + ":" + std::to_string(line) + ": byte " + std::to_string(valid) + " (" + byte +
                           ") is not UTF-8; the tokenizer would replace it and decoding would not give the text "
                           "back: convert the file to UTF-8 (iconv -f LATIN1 -t UTF-8)");
}

// The lines of the texts, one file in memory at a time, handed to SentencePiece's trainer (a long
// line in pieces it keeps).
class Lines {
 public:
  explicit Lines(std::vector<std::string> files) : files_(std::move(files)) {}
  // spm_api.h's `next`: 1 and a line, 0 at the end, -1 (the error kept) when a file cannot be read.
  static int next(void* context, const char** line, size_t* size) {
    auto* self = static_cast<Lines*>(context);
    try {
      if (!self->advance()) return 0;
    } catch (const std::exception& e) {
      self->error_ = e.what();
      return -1;
    }
    *line = self->text_.data() + self->line_start_;
    *size = self->line_size_;
    return 1;
  }
  const std::string& error() const { return error_; }

 private:
  bool advance() {
    while (true) {
      if (at_ < text_.size()) {
        const std::size_t end = std::min(text_.find('\n', at_), text_.size());
        const std::string_view piece = next_piece(std::string_view(text_).substr(0, end), at_, kTrainingPiece);
        line_start_ = at_;
        line_size_ = piece.size();
        at_ += piece.size();
        if (at_ == end) ++at_;  // past the line's end
        if (line_size_ > 0) return true;
        continue;
      }
      if (next_file_ == files_.size()) return false;
      text_ = read_text_file(files_[next_file_]);
      check_utf8(text_, files_[next_file_++]);
      at_ = 0;
    }
  }

  std::vector<std::string> files_;
  std::size_t next_file_ = 0;
  std::string text_;
  std::size_t at_ = 0;
  std::size_t line_start_ = 0;
  std::size_t line_size_ = 0;
  std::string error_;
};

// A function of this library: where it was loaded from.
void anchor() {}

// libbaton_spm, beside this library, opened once.
const baton_spm_api& spm() {
  static const baton_spm_api* api = [] {
    Dl_info self{};
    if (::dladdr(reinterpret_cast<void*>(&anchor), &self) == 0 || self.dli_fname == nullptr) {
      throw std::runtime_error("cannot find where libbaton_data is, so neither libbaton_spm beside it");
    }
    const std::string path = (fs::path(self.dli_fname).parent_path() / "libbaton_spm.so").string();
#if defined(__SANITIZE_ADDRESS__)
    const int flags = RTLD_NOW | RTLD_LOCAL;  // the sanitizers refuse RTLD_DEEPBIND; their LibTorch has no protobuf
#else
    const int flags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
    void* library = ::dlopen(path.c_str(), flags);
    if (library == nullptr)
      throw std::runtime_error(std::string("cannot load SentencePiece's wrapper: ") + ::dlerror());
    auto get = reinterpret_cast<const baton_spm_api* (*)()>(::dlsym(library, "baton_spm_get_api"));
    if (get == nullptr) throw std::runtime_error(path + ": not baton's SentencePiece wrapper");
    return get();
  }();
  return *api;
}

}  // namespace

struct Tokenizer::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (model_ != nullptr) spm().release(model_);
  }
  baton_spm* model_ = nullptr;
  int newline_ = -1;
  int end_of_text_ = -1;
};

int Tokenizer::newline_id() const { return impl_->newline_; }
int Tokenizer::end_of_text_id() const { return impl_->end_of_text_; }
int Tokenizer::begin_of_text_id() const { return spm().bos_id(impl_->model_); }
int Tokenizer::piece_id(const std::string& piece) const {
  const int id = spm().piece_to_id(impl_->model_, piece.c_str());
  return id == spm().unk_id(impl_->model_) && piece != "<unk>" ? -1 : id;
}

Tokenizer::Tokenizer(baton_spm* model) : impl_(std::make_unique<Impl>()) {
  impl_->model_ = model;
  const int newline = spm().piece_to_id(impl_->model_, "<0x0A>");
  impl_->newline_ = newline != spm().unk_id(impl_->model_) && spm().is_byte(impl_->model_, newline) != 0 ? newline : -1;
  impl_->end_of_text_ = spm().eos_id(impl_->model_);
}

Tokenizer::Tokenizer(Tokenizer&& other) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&& other) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path, {.what = "the tokenizer", .max_bytes = kMaxModelBytes});
  } catch (const FileError& e) {
    throw std::runtime_error(e.what());
  }
  baton_spm* model = spm().load(bytes.data(), bytes.size());
  if (model == nullptr) {
    throw std::runtime_error(path + ": not a SentencePiece model (write one with baton tokenize --vocab-size N)");
  }
  return Tokenizer(model);
}

Tokenizer Tokenizer::train(const std::vector<std::string>& texts, const std::string& prefix,
                           const TokenizerTraining& options) {
  if (options.vocab_size < 300 || options.vocab_size > 65536) {
    throw std::invalid_argument("vocab size " + std::to_string(options.vocab_size) +
                                ": expected 300 to 65536 (256 byte pieces plus merges; tokens are uint16)");
  }
  const std::vector<std::string> models = {"bpe", "unigram", "char", "word"};
  if (std::find(models.begin(), models.end(), options.model_type) == models.end()) {
    throw std::invalid_argument("model type '" + options.model_type + "': expected bpe, unigram, char or word");
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // Text as it is (no normalisation, spaces kept), any byte a byte piece: decode(encode(x)) == x.
  const std::vector<std::string> spec = {
      "vocab_size=" + std::to_string(options.vocab_size),
      "model_type=" + options.model_type,
      "byte_fallback=true",
      "normalization_rule_name=identity",
      "remove_extra_whitespaces=false",
      "add_dummy_prefix=false",  // lines are encoded one by one: no space is added before each
      "split_digits=true",
      "character_coverage=0.9995",
      "input_sentence_size=" + std::to_string(options.max_sentences),
      "shuffle_input_sentence=true",
      "max_sentence_length=16384",
      "num_threads=" + std::to_string(options.threads > 0 ? options.threads : static_cast<int>(cores)),
      "minloglevel=2",
  };
  std::vector<const char*> args;
  args.reserve(spec.size());
  for (const std::string& o : spec) args.push_back(o.c_str());
  std::vector<std::string> files = all_text_files(texts);
  check_texts(files);
  Lines lines(std::move(files));
  std::array<char, 512> error{};
  baton_spm* model = spm().train(args.data(), args.size(), &Lines::next, &lines, error.data(), error.size());
  if (model == nullptr) {
    if (!lines.error().empty()) throw std::runtime_error(lines.error());
    throw std::runtime_error("training the tokenizer failed: " + one_line(error.data(), 200) +
                             " (a smaller --vocab-size, or more text)");
  }
  Tokenizer t(model);
  write_file_atomically(prefix + ".model", t.serialized());
  return t;
}

int64_t Tokenizer::vocab_size() const { return spm().piece_size(impl_->model_); }

std::vector<int> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids(text.size() + 8);
  long n = spm().encode(impl_->model_, text.data(), text.size(), ids.data(), ids.size());
  if (n > static_cast<long>(ids.size())) {
    ids.resize(static_cast<std::size_t>(n));
    n = spm().encode(impl_->model_, text.data(), text.size(), ids.data(), ids.size());
  }
  if (n < 0) throw std::runtime_error("the tokenizer cannot encode the text");
  ids.resize(static_cast<std::size_t>(n));
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string text(ids.size() * 8 + 16, '\0');
  long n = spm().decode(impl_->model_, ids.data(), ids.size(), text.data(), text.size());
  if (n > static_cast<long>(text.size())) {
    text.resize(static_cast<std::size_t>(n));
    n = spm().decode(impl_->model_, ids.data(), ids.size(), text.data(), text.size());
  }
  if (n < 0) throw std::runtime_error("the tokenizer cannot decode the ids");
  text.resize(static_cast<std::size_t>(n));
  return text;
}

std::string Tokenizer::serialized() const {
  std::string bytes(spm().serialized(impl_->model_, nullptr, 0), '\0');
  spm().serialized(impl_->model_, bytes.data(), bytes.size());
  return bytes;
}

namespace {

// A SentencePiece tokenizer's ids of a text: line by line (pieces of a long line), each line break
// as the newline token.
void encode_lines(const Tokenizer& tokenizer, const std::string& text, std::vector<uint32_t>& ids) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = std::string_view(text).substr(0, end);
    for (std::size_t from = at; from < end;) {  // a long line in pieces: memory stays bounded
      const std::string_view piece = next_piece(line, from, kEncodingPiece);
      for (int id : tokenizer.encode(std::string(piece))) ids.push_back(static_cast<uint32_t>(id));
      from += piece.size();
    }
    if (end < text.size() && tokenizer.newline_id() >= 0) ids.push_back(static_cast<uint32_t>(tokenizer.newline_id()));
    at = end + 1;
  }
}

// A tokenizer.json's ids of a text: its parts (TextTokenizer::parts) encoded on `threads` threads,
// a round of at most 4 parts a thread at a time (memory stays bounded), joined in order.
constexpr std::size_t kPartBytes = 1 << 20;

void encode_parts(const TextTokenizer& tokenizer, const std::string& text, int threads, std::vector<uint32_t>& ids) {
  const std::vector<std::string_view> parts = tokenizer.parts(text, kPartBytes);
  const std::size_t round = static_cast<std::size_t>(threads) * 4;
  for (std::size_t first = 0; first < parts.size(); first += round) {
    const std::size_t n = std::min(round, parts.size() - first);
    std::vector<std::vector<int64_t>> encoded(n);
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
    auto work = [&](std::size_t worker) {
      try {
        for (std::size_t i = worker; i < n; i += static_cast<std::size_t>(threads)) {
          encoded[i] = tokenizer.encode(parts[first + i]);
        }
      } catch (...) {
        errors[worker] = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads) - 1);
    for (std::size_t w = 1; w < static_cast<std::size_t>(threads) && w < n; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
    for (const auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (const auto& part : encoded) ids.insert(ids.end(), part.begin(), part.end());
  }
}

}  // namespace

TokenizeSummary tokenize_files(const std::vector<std::string>& texts, const TextTokenizer& tokenizer,
                               const TokenizeOptions& options) {
  if (!(options.val_fraction >= 0 && options.val_fraction < 1)) {
    throw std::invalid_argument("val fraction " + std::to_string(options.val_fraction) + ": expected 0 to 1 (not 1)");
  }
  if (options.shard_tokens < 1024 || options.shard_tokens > INT32_MAX) {
    throw std::invalid_argument("shard tokens " + std::to_string(options.shard_tokens) +
                                ": expected 1024 to 2147483647 per shard");
  }
  if (options.threads < 0)
    throw std::invalid_argument("threads " + std::to_string(options.threads) + ": expected 0 or more");
  const int threads =
      options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const std::vector<std::string> files = all_text_files(texts);
  check_texts(files);
  std::error_code ec;
  fs::create_directories(options.out, ec);
  if (!fs::is_directory(options.out, ec)) throw FileError(options.out + ": cannot make the folder");
  TokenizeSummary summary;
  const bool wide = tokenizer.vocab_size() > 65536;
  summary.token_bytes = wide ? 4 : 2;
  struct Split {
    const char* name;
    std::vector<uint32_t> tokens;
    int shards = 0;
  } train{"train", {}, 0}, val{"val", {}, 0};
  auto flush = [&](Split& split, bool last) {
    while (static_cast<int64_t>(split.tokens.size()) >= options.shard_tokens || (last && !split.tokens.empty())) {
      const auto take = static_cast<std::ptrdiff_t>(std::min<std::size_t>(split.tokens.size(), options.shard_tokens));
      char name[64];
      std::snprintf(name, sizeof name, "%s_%06d.bin", split.name, split.shards++);
      const std::string path = (fs::path(options.out) / name).string();
      if (wide) {
        write_token_shard(path, std::vector<uint32_t>(split.tokens.begin(), split.tokens.begin() + take));
      } else {
        write_token_shard(path, std::vector<uint16_t>(split.tokens.begin(), split.tokens.begin() + take));
      }
      split.tokens.erase(split.tokens.begin(), split.tokens.begin() + take);
      summary.shards.push_back(path);
    }
  };
  for (const std::string& file : files) {
    std::vector<uint32_t> ids;
    const std::string text = read_text_file(file);
    check_utf8(text, file);
    if (const Tokenizer* sentencepiece = tokenizer.sentencepiece()) {
      encode_lines(*sentencepiece, text, ids);
    } else {
      encode_parts(tokenizer, text, threads, ids);
    }
    if (tokenizer.end_of_text_id() >= 0) ids.push_back(static_cast<uint32_t>(tokenizer.end_of_text_id()));
    const auto held = static_cast<std::size_t>(static_cast<double>(ids.size()) * options.val_fraction);
    train.tokens.insert(train.tokens.end(), ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(held));
    val.tokens.insert(val.tokens.end(), ids.end() - static_cast<std::ptrdiff_t>(held), ids.end());
    summary.train_tokens += static_cast<int64_t>(ids.size() - held);
    summary.val_tokens += static_cast<int64_t>(held);
    flush(train, false);
    flush(val, false);
  }
  flush(train, true);
  flush(val, true);
  return summary;
}

TokenizeSummary tokenize_files(const std::vector<std::string>& texts, const Tokenizer& tokenizer,
                               const TokenizeOptions& options) {
  // Not owned: the tokenizer outlives the call.
  return tokenize_files(texts, TextTokenizer::of(std::shared_ptr<const Tokenizer>(&tokenizer, [](const Tokenizer*) {})),
                        options);
}

}  // namespace baton
