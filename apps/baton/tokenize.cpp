// baton tokenize TEXT... --out DIR [--vocab-size N | --tokenizer FILE.model] [--model-type bpe]
//                [--val-fraction 0.1] [--shard-tokens 100000000]
// (the library call: tokenize_corpus, include/baton/runs/model_commands.h)
#include <cstdio>

#include <CLI/CLI.hpp>

#include "baton/runs/model_commands.h"
#include "commands.h"

namespace baton::cli {

void add_tokenize(CLI::App& app) {
  auto request = std::make_shared<TokenizeRequest>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Tokenize text files into token shards (llm.c's format) with a SentencePiece tokenizer");
  cmd->add_option("texts", request->texts, "Text files or folders of them")->required();
  cmd->add_option("--out", request->out, "Folder for train_NNNNNN.bin, val_NNNNNN.bin and tokenizer.model")->required();
  cmd->add_option("--vocab-size", request->vocab_size, "Train a tokenizer of this many tokens (300 to 65536)")
      ->check(CLI::Range(int64_t{300}, int64_t{65536}));
  cmd->add_option("--tokenizer", request->tokenizer, "Use this SentencePiece model instead of training one");
  cmd->add_option("--model-type", request->training.model_type, "SentencePiece's model type")
      ->check(CLI::IsMember({"bpe", "unigram", "char", "word"}))
      ->capture_default_str();
  cmd->add_option("--val-fraction", request->options.val_fraction, "The end of each text held out for validation")
      ->check(finite_between(0, 0.99))
      ->capture_default_str();
  cmd->add_option("--shard-tokens", request->options.shard_tokens, "Tokens per shard")
      ->check(CLI::Range(int64_t{1024}, int64_t{2147483647}))
      ->capture_default_str();
  cmd->callback([request] {
    request->progress = [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    const TokenizedCorpus corpus = tokenize_corpus(*request);
    const TokenizeSummary& s = corpus.summary;
    std::printf("%lld training and %lld validation tokens in %zu shard(s) in %s; tokenizer %s (%lld tokens)\n",
                static_cast<long long>(s.train_tokens), static_cast<long long>(s.val_tokens), s.shards.size(),
                request->out.c_str(), corpus.tokenizer_path.c_str(), static_cast<long long>(corpus.vocab_size));
  });
}

}  // namespace baton::cli
