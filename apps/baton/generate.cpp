// baton generate SOURCE [--load CKPT | --adapter PEFT_DIR] (--prompt TEXT | --prompts FILE) [--max-new-tokens N]
//                [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S]
//                [--ignore-eos] [--no-special-tokens] [--json] [--device DEVICE] [--set key=value]...
// (the library call: generate_text, include/baton/runs/generate_text.h)
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/io/file.h"
#include "baton/runs/generate_text.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct GenerateArgs {
  GenerateRequest request;
  std::string prompt, prompts_file;
  bool json = false;
};

// One prompt a line of the file (empty lines skipped).
std::vector<std::string> prompt_lines(const std::string& file) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(read_file(file, {.what = "the prompts", .max_bytes = 64 << 20}));
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  if (out.empty()) throw RecipeError(file + ": no prompt (one a line)");
  return out;
}

void run_generate(GenerateArgs& a) {
  GenerateRequest& r = a.request;
  if (a.prompt.empty() == a.prompts_file.empty())
    throw RecipeError("give --prompt TEXT or --prompts FILE, one of them");
  r.prompts = a.prompt.empty() ? prompt_lines(a.prompts_file) : std::vector<std::string>{a.prompt};
  const bool stream = !a.json && r.prompts.size() == 1;  // the prompt, then each token's text as it comes
  bool started = false;
  const auto generated = generate_text(r, [&](std::size_t, const std::string& text) {
    if (!stream) return;
    if (!started) std::printf("%s", r.prompts[0].c_str());
    started = true;
    std::printf("%s", text.c_str());
    std::fflush(stdout);
  });
  if (stream && !started) std::printf("%s", r.prompts[0].c_str());
  for (const auto& g : generated) {
    if (a.json) {
      std::printf("%s\n", nlohmann::json{{"prompt", g.prompt}, {"ids", g.ids}, {"text", g.text}}
                              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                              .c_str());
    } else if (!stream) {
      std::printf("%s%s\n", g.prompt.c_str(), g.text.c_str());
    }
    if (g.truncated > 0) {
      std::fprintf(stderr, "generate: the prompt \"%.40s\" kept its last tokens: %lld dropped from its front\n",
                   g.prompt.c_str(), static_cast<long long>(g.truncated));
    }
  }
  if (stream) std::printf("\n");
}

}  // namespace

void add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  GenerateRequest& r = a->request;
  CLI::App* cmd = app.add_subcommand("generate", "continue text prompts with a Hugging Face language model");
  cmd->add_option("source", r.source, "a Hugging Face model's folder, or a recipe whose model is hf (with --load)")
      ->required();
  cmd->add_option("--load", r.load, "with a recipe: the checkpoint whose weights generate (a LoRA run's too)");
  cmd->add_option("--adapter", r.adapter,
                  "with a model's folder: a PEFT LoRA adapter folder on it (baton export --format peft writes one)");
  cmd->add_option("--prompt", a->prompt, "the text to continue");
  cmd->add_option("--prompts", a->prompts_file, "a file of prompts, one a line (generated together)");
  cmd->add_option("--max-new-tokens", r.max_new_tokens, "tokens to generate (default: generation_config's, else 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--temperature", r.temperature, "0: greedy; else sample with this temperature")
      ->check(finite_between(0, 100));
  cmd->add_option("--top-k", r.top_k, "sample among the k most likely tokens")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--top-p", r.top_p, "sample among the fewest tokens whose probability reaches p")
      ->check(finite_between(0, 1));
  cmd->add_option("--repetition-penalty", r.repetition_penalty, "> 1: tokens already there less likely")
      ->check(finite_between(0.01, 100));
  cmd->add_option("--seed", r.seed, "sampling's seed: the same seed, the same text")->capture_default_str();
  cmd->add_flag("--ignore-eos", r.ignore_eos, "never stop at the end-of-text token");
  cmd->add_flag(
      "--no-special-tokens", [&r](int64_t) { r.special_tokens = false; },
      "the prompts' ids alone: no BOS or other token the tokenizer puts around a text");
  cmd->add_flag("--json", a->json, "one JSON line a prompt: {\"prompt\", \"ids\", \"text\"} (ids: the new tokens')");
  cmd->add_option("--set", r.sets, "with a recipe: override a key, key.path=value (repeatable)");
  cmd->add_option("--device", r.device, "where it runs: cpu (default), cuda or cuda:N")->capture_default_str();
  cmd->callback([a] { run_generate(*a); });
}

}  // namespace baton::cli
