// A language model's generation and a tokenizer's speed, for bench/llm_bench.sh (which runs the
// same measures with transformers and tokenizers, bench/peers/llm_peer.py, and the training rows
// with `baton train`). One JSON line per measure.
//
//   build/bin/llm_bench generate --model DIR [--batch 1] [--prompt-tokens 32] [--new-tokens 128]
//                                [--no-cache] [--random] [--reps 3] [--device cpu]
//       greedy decoding of random prompts (every one --prompt-tokens long) with the key/value cache,
//       or without it (every token so far again each step); tokens/s = batch x new tokens / the
//       median seconds of a generation (a warm-up generation first)
//   build/bin/llm_bench tokenize --tokenizer DIR --text FILE [--threads 1] [--reps 3]
//       `baton tokenize`'s work (tokenize_files: the shards written to a temporary folder) on one
//       thread or several; MB/s = the file's megabytes / the median seconds
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/core/device.h"
#include "baton/data/text_tokenizer.h"
#include "baton/data/tokenizer.h"
#include "baton/io/file.h"
#include "baton/models/generate.h"
#include "baton/models/hf.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct GenerateArgs {
  std::string model, device = "cpu";
  int64_t batch = 1, prompt_tokens = 32, new_tokens = 128, reps = 3;
  bool no_cache = false, random = false;
};

nlohmann::json generate(const GenerateArgs& a) {
  torch::set_num_threads(static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  auto model = a.random ? baton::make_hf_model(baton::read_hf_config(a.model)) : baton::load_hf_model(a.model);
  model->to(baton::parse_device(a.device));
  const int64_t vocab = baton::hf_config_of(*model)->vocab_size;
  baton::Generator generator(model);
  torch::manual_seed(0);
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t i = 0; i < a.batch; ++i) {
    const at::Tensor ids = torch::randint(vocab, {a.prompt_tokens}, torch::kLong);
    prompts.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + a.prompt_tokens);
  }
  const auto options = baton::GenerateOptions().max_new_tokens(a.new_tokens).ignore_eos(true).use_cache(!a.no_cache);
  generator.generate(prompts, baton::GenerateOptions(options).max_new_tokens(4));  // warm-up
  std::vector<double> times;
  for (int64_t r = 0; r < a.reps; ++r) {
    const auto start = Clock::now();
    const auto out = generator.generate(prompts, options);
    times.push_back(seconds_since(start));
    if (static_cast<int64_t>(out.front().size()) != a.new_tokens) throw std::runtime_error("fewer tokens than asked");
  }
  const double s = median(times);
  return {{"row", "generate"},
          {"impl", "baton"},
          {"batch", a.batch},
          {"prompt_tokens", a.prompt_tokens},
          {"new_tokens", a.new_tokens},
          {"cache", !a.no_cache},
          {"seconds", s},
          {"tokens_per_s", static_cast<double>(a.batch * a.new_tokens) / s}};
}

struct TokenizeArgs {
  std::string tokenizer, text;
  int threads = 1;
  int64_t reps = 3;
};

nlohmann::json tokenize(const TokenizeArgs& a) {
  namespace fs = std::filesystem;
  const baton::TextTokenizer tokenizer = baton::TextTokenizer::load(a.tokenizer);
  const fs::path out = fs::temp_directory_path() / ("llm_bench_tokens_" + std::to_string(::getpid()));
  std::vector<double> times;
  int64_t tokens = 0;
  for (int64_t r = 0; r < a.reps + 1; ++r) {  // the first: a warm-up (the page cache, the merges' cache)
    baton::remove_tree(out);
    const auto start = Clock::now();
    const auto summary =
        baton::tokenize_files({a.text}, tokenizer, {.out = out.string(), .val_fraction = 0, .threads = a.threads});
    if (r > 0) times.push_back(seconds_since(start));
    tokens = summary.train_tokens;
  }
  baton::remove_tree(out);
  const double s = median(times);
  const double mb = static_cast<double>(fs::file_size(a.text)) / 1e6;
  return {{"row", "tokenize"}, {"impl", "baton"}, {"threads", a.threads}, {"megabytes", mb},
          {"tokens", tokens},  {"seconds", s},    {"mb_per_s", mb / s}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("baton's language-model benchmarks (bench/llm_bench.sh compares them with transformers)");
  app.require_subcommand(1);
  GenerateArgs g;
  CLI::App* gen = app.add_subcommand("generate", "greedy generation's tokens/s");
  gen->add_option("--model", g.model, "a Hugging Face folder")->required();
  gen->add_option("--batch", g.batch)->check(CLI::Range(1, 256));
  gen->add_option("--prompt-tokens", g.prompt_tokens)->check(CLI::Range(1, 65536));
  gen->add_option("--new-tokens", g.new_tokens)->check(CLI::Range(1, 65536));
  gen->add_option("--reps", g.reps)->check(CLI::Range(1, 100));
  gen->add_option("--device", g.device);
  gen->add_flag("--no-cache", g.no_cache, "recompute every token so far at each step");
  gen->add_flag("--random", g.random, "the folder's config.json alone, initial weights (the GPU kit's rows)");
  TokenizeArgs t;
  CLI::App* tok = app.add_subcommand("tokenize", "baton tokenize's MB/s");
  tok->add_option("--tokenizer", t.tokenizer, "a model's folder, a tokenizer.json or a .model")->required();
  tok->add_option("--text", t.text, "a text file")->required()->check(CLI::ExistingFile);
  tok->add_option("--threads", t.threads)->check(CLI::Range(1, 1024));
  tok->add_option("--reps", t.reps)->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  try {
    const nlohmann::json row = gen->parsed() ? generate(g) : tokenize(t);
    std::printf("%s\n", row.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
