// `baton generate` as a library call (src/runs/generate_text.cpp) on a folder written here: a small
// random Llama, a byte-level tokenizer of 256 tokens and a generation_config.json: its defaults
// taken and overridden, the text the ids decode to, and what is wrong named before generating.
#include "baton/runs/generate_text.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/models/hf.h"
#include "baton/models/safetensors.h"
#include "baton/train/recipe_file.h"
#include "common/byte_tokenizer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

struct Folder {
  testing::TempDir dir{"generate_text"};
  explicit Folder(int64_t vocab = 256) {
    const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"vocab_size", vocab},
                                   {"hidden_size", 16},
                                   {"intermediate_size", 32},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},
                                   {"max_position_embeddings", 64},
                                   {"initializer_range", 0.5},
                                   {"eos_token_id", 10}};
    std::ofstream(dir.file("config.json")) << config.dump();
    torch::manual_seed(0);
    write_safetensors(dir.file("model.safetensors"), model_tensors(*make_hf_model(read_hf_config(dir.str()))));
    std::ofstream(dir.file("tokenizer.json")) << testing::byte_tokenizer().dump();
    std::ofstream(dir.file("generation_config.json")) << R"({"max_new_tokens": 5, "eos_token_id": 10})";
  }
};

TEST(GenerateText, TheFoldersDefaultsTheTextOfTheIdsAndTheRequestsOverrides) {
  Folder folder;
  GenerateRequest r;
  r.source = folder.dir.str();
  r.prompts = {"hello", "a longer prompt"};
  r.ignore_eos = true;
  std::string streamed;
  const auto out = generate_text(r, [&](std::size_t i, const std::string& text) { streamed += i == 0 ? text : ""; });
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].ids.size(), 5U) << "generation_config.json's max_new_tokens";
  std::string bytes;
  for (const int64_t id : out[0].ids) bytes += static_cast<char>(id);
  EXPECT_EQ(out[0].text, bytes) << "the byte tokenizer's text of the ids";
  EXPECT_EQ(streamed, out[0].text) << "the text as it came";
  r.max_new_tokens = 9;
  r.temperature = 1.0;
  r.seed = 4;
  const auto sampled = generate_text(r);
  EXPECT_EQ(sampled[1].ids.size(), 9U);
  EXPECT_EQ(generate_text(r)[1].ids, sampled[1].ids) << "the same seed";
}

TEST(GenerateText, WhatIsWrongIsNamedBeforeGenerating) {
  Folder folder;
  GenerateRequest r;
  r.source = folder.dir.str();
  EXPECT_THAT(error_of([&] { generate_text(r); }), HasSubstr("no prompt"));
  r.prompts = {"x"};
  r.max_new_tokens = 64;
  EXPECT_THAT(error_of([&] { generate_text(r); }), HasSubstr("max_new_tokens is 64; expected 1 to 63"));
  r.max_new_tokens.reset();
  r.load = "ckpt";
  EXPECT_THAT(error_of([&] { generate_text(r); }), HasSubstr("--load takes a recipe's checkpoint"));
  r.load.clear();
  Folder small(200);  // the tokenizer's 256 ids do not fit 200 embeddings
  r.source = small.dir.str();
  EXPECT_THAT(error_of([&] { generate_text(r); }), HasSubstr("the tokenizer has 256 tokens, more than the model's"));
  std::filesystem::remove(folder.dir / "tokenizer.json");
  r.source = folder.dir.str();
  EXPECT_THAT(error_of([&] { generate_text(r); }), HasSubstr("no tokenizer.json or tokenizer.model beside the model"));
}

}  // namespace
}  // namespace baton
