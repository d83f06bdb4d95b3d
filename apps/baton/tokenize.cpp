// baton tokenize TEXT... --out DIR [--vocab-size N | --tokenizer FILE.model] [--model-type bpe]
//                [--val-fraction 0.1] [--shard-tokens 100000000]
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>

#include "baton/data/tokenizer.h"
#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/train/recipe_file.h"
#include "commands.h"

namespace baton::cli {
namespace {

namespace fs = std::filesystem;

struct TokenizeArgs {
  std::vector<std::string> texts;
  std::string out;
  int64_t vocab_size = 0;
  std::string tokenizer;
  TokenizerTraining training;
  TokenizeOptions options;
};

// Nothing is written into a folder that already holds a corpus's shards or tokenizer.
void check_out(const std::string& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec)) throw RecipeError("--out " + out + ": " + file_kind(out) + ", not a folder");
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == kTokenizerFile ||
        (name.ends_with(".bin") && (name.starts_with("train_") || name.starts_with("val_")))) {
      std::string why = "--out " + out;
      why += ": already holds " + name + " (a tokenized corpus): choose a new folder";
      throw RecipeError(why);
    }
  }
}

// The files go to a folder of their own beside --out (.OUT.tmp.PID), moved into --out once all are
// written: a failed or killed run leaves nothing in --out that blocks the next.
class Staging {
 public:
  explicit Staging(const std::string& out) : out_(out) {
    const fs::path target = fs::absolute(out);
    const fs::path parent = target.parent_path();
    std::error_code ec;
    fs::create_directories(parent, ec);
    remove_stale_temporaries(parent.string());  // those of a killed run
    path_ = parent / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
    fs::remove_all(path_, ec);
    if (!fs::create_directory(path_, ec)) {
      throw FileError(out + ": cannot make a folder beside it (" + ec.message() + ")");
    }
  }
  ~Staging() {
    std::error_code ec;
    fs::remove_all(path_, ec);  // what did not go into --out
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  std::string path() const { return path_.string(); }
  // Every file into --out (made when missing): then --out holds the corpus, whole.
  void commit() {
    std::error_code ec;
    if (!fs::exists(out_, ec) && (fs::rename(path_, out_, ec), !ec)) return;
    fs::create_directories(out_, ec);
    for (const auto& entry : fs::directory_iterator(path_))
      fs::rename(entry.path(), fs::path(out_) / entry.path().filename());
  }

 private:
  std::string out_;
  fs::path path_;
};

void run_tokenize(TokenizeArgs& args) {
  if ((args.vocab_size > 0) == !args.tokenizer.empty()) {
    throw RecipeError("give --vocab-size N (train a tokenizer) or --tokenizer FILE.model (use one), not both");
  }
  std::vector<std::string> inputs = args.texts;
  inputs.push_back(args.tokenizer);
  check_output_folder(args.out, "--out", inputs);  // its own files would be read as text
  check_out(args.out);
  for (const std::string& text : args.texts) {
    std::error_code ec;
    if (!fs::exists(text, ec)) throw RecipeError(text + ": no such file or folder");
  }
  const std::string model_path = (fs::path(args.out) / kTokenizerFile).string();
  try {
    std::optional<Tokenizer> tokenizer;
    if (!args.tokenizer.empty()) {
      tokenizer = Tokenizer::load(args.tokenizer);
      if (tokenizer->vocab_size() > 65536) {
        throw RecipeError(args.tokenizer + ": " + std::to_string(tokenizer->vocab_size()) +
                          " tokens, more than a token shard holds (65536)");
      }
    }
    Staging staging(args.out);
    args.options.out = staging.path();
    if (!tokenizer) {
      args.training.vocab_size = args.vocab_size;
      std::printf("training a %s tokenizer of %lld tokens on %zu text(s)\n", args.training.model_type.c_str(),
                  static_cast<long long>(args.vocab_size), args.texts.size());
      std::fflush(stdout);
      tokenizer = Tokenizer::train(args.texts, (fs::path(staging.path()) / "tokenizer").string(), args.training);
    } else {
      write_file_atomically((fs::path(staging.path()) / kTokenizerFile).string(), tokenizer->serialized());
    }
    const TokenizeSummary s = tokenize_files(args.texts, *tokenizer, args.options);
    staging.commit();
    std::printf("%lld training and %lld validation tokens in %zu shard(s) in %s; tokenizer %s (%lld tokens)\n",
                static_cast<long long>(s.train_tokens), static_cast<long long>(s.val_tokens), s.shards.size(),
                args.out.c_str(), model_path.c_str(), static_cast<long long>(tokenizer->vocab_size()));
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const RecipeError*>(&e) != nullptr || dynamic_cast<const FileError*>(&e) != nullptr) throw;
    throw RecipeError(e.what());  // a text or tokenizer that is not one: the user's input
  }
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Tokenize text files into token shards (llm.c's format) with a SentencePiece tokenizer");
  cmd->add_option("texts", args->texts, "Text files or folders of them")->required();
  cmd->add_option("--out", args->out, "Folder for train_NNNNNN.bin, val_NNNNNN.bin and tokenizer.model")->required();
  cmd->add_option("--vocab-size", args->vocab_size, "Train a tokenizer of this many tokens (300 to 65536)")
      ->check(CLI::Range(int64_t{300}, int64_t{65536}));
  cmd->add_option("--tokenizer", args->tokenizer, "Use this SentencePiece model instead of training one");
  cmd->add_option("--model-type", args->training.model_type, "SentencePiece's model type")
      ->check(CLI::IsMember({"bpe", "unigram", "char", "word"}))
      ->capture_default_str();
  cmd->add_option("--val-fraction", args->options.val_fraction, "The end of each text held out for validation")
      ->check(finite_between(0, 0.99))
      ->capture_default_str();
  cmd->add_option("--shard-tokens", args->options.shard_tokens, "Tokens per shard")
      ->check(CLI::Range(int64_t{1024}, int64_t{2147483647}))
      ->capture_default_str();
  cmd->callback([args] { run_tokenize(*args); });
}

}  // namespace baton::cli
