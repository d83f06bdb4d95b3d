// baton tokenize TEXT... --out DIR [--vocab-size N | --tokenizer PATH] [--model-type bpe]
//                [--val-fraction 0.1] [--shard-tokens 100000000] [--threads 0]
// baton tokenize --tokenizer PATH --ids FILE       the ids of FILE's text, one JSON list
// baton tokenize --tokenizer PATH --decode FILE    the text of ids (a JSON list or a token shard)
// (the library calls: tokenize_corpus, text_ids, ids_text in include/baton/runs/model_commands.h)
#include <cstdio>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/runs/model_commands.h"
#include "commands.h"

namespace baton::cli {

namespace {

void print_corpus(const TokenizeRequest& request) {
  const TokenizedCorpus corpus = tokenize_corpus(request);
  const TokenizeSummary& s = corpus.summary;
  std::printf(
      "%lld training and %lld validation tokens in %zu shard(s) of %s tokens in %s; tokenizer %s (%lld tokens)\n",
      static_cast<long long>(s.train_tokens), static_cast<long long>(s.val_tokens), s.shards.size(),
      s.token_bytes == 4 ? "uint32 (llm.c's Llama 3 format: magic 20240801)"
                         : "uint16 (llm.c's format: magic 20240520)",
      request.out.c_str(), corpus.tokenizer_path.c_str(), static_cast<long long>(corpus.vocab_size));
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto request = std::make_shared<TokenizeRequest>();
  auto ids = std::make_shared<std::string>();
  auto decode = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize text files into token shards (llm.c's format) with a model's tokenizer (tokenizer.json or "
      "tokenizer.model) or one trained here (SentencePiece); or a text's ids (--ids), or ids' text (--decode)");
  cmd->add_option("texts", request->texts, "Text files or folders of them");
  cmd->add_option("--out", request->out, "Folder for train_NNNNNN.bin, val_NNNNNN.bin and the tokenizer's files");
  cmd->add_option("--vocab-size", request->vocab_size,
                  "Train a SentencePiece tokenizer of this many tokens (300 to 65536)")
      ->check(CLI::Range(int64_t{300}, int64_t{65536}));
  cmd->add_option("--tokenizer", request->tokenizer,
                  "Use this tokenizer: a model's folder (its tokenizer.json, else tokenizer.model), a tokenizer.json, "
                  "or a SentencePiece .model");
  cmd->add_option("--ids", *ids, "Print the ids of this text file's text as one JSON list (nothing added)");
  cmd->add_option("--decode", *decode, "Print the text of the ids in this file: a JSON list or a token shard (.bin)");
  cmd->add_option("--model-type", request->training.model_type, "SentencePiece's model type")
      ->check(CLI::IsMember({"bpe", "unigram", "char", "word"}))
      ->capture_default_str();
  cmd->add_option("--val-fraction", request->options.val_fraction, "The end of each text held out for validation")
      ->check(finite_between(0, 0.99))
      ->capture_default_str();
  cmd->add_option("--shard-tokens", request->options.shard_tokens, "Tokens per shard")
      ->check(CLI::Range(int64_t{1024}, int64_t{2147483647}))
      ->capture_default_str();
  cmd->add_option("--threads", request->options.threads, "Threads encoding with a tokenizer.json (0: the cores)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd->callback([request, ids, decode] {
    if (!ids->empty() || !decode->empty()) {
      if (request->tokenizer.empty()) throw CLI::ValidationError("--ids and --decode need --tokenizer PATH");
      if (!ids->empty() && !decode->empty()) throw CLI::ValidationError("give --ids or --decode, not both");
      if (!request->texts.empty() || !request->out.empty())
        throw CLI::ValidationError("--ids and --decode print to the terminal: no texts or --out with them");
      if (!ids->empty()) {
        std::printf("%s\n", nlohmann::json(text_ids(request->tokenizer, *ids)).dump().c_str());
      } else {
        const std::string text = ids_text(request->tokenizer, *decode);
        std::fwrite(text.data(), 1, text.size(), stdout);
      }
      return;
    }
    if (request->texts.empty()) throw CLI::ValidationError("texts: give text files or folders to tokenize");
    if (request->out.empty()) throw CLI::ValidationError("--out: the folder for the shards is required");
    request->progress = [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    print_corpus(*request);
  });
}

}  // namespace baton::cli
