#include "baton/data/text.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/options.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;
using testing::write_file;

std::string decode(const at::Tensor& ids, const std::string& alphabet) {
  std::string out;
  for (int64_t i = 0; i < ids.numel(); ++i) out += alphabet[static_cast<std::size_t>(ids[i].item<int64_t>())];
  return out;
}

TEST(Text, WindowsAreTheTextAndTheirTargetsTheNextCharacters) {
  const testing::TempDir tmp("text_windows");
  const fs::path dir = tmp.path();
  std::string text;
  for (int i = 0; i < 50; ++i) text += "the quick brown fox. ";
  write_file(dir / "t.txt", text);
  auto [train, valid] = load_text((dir / "t.txt").string(), TextOptions().context(8).validation_fraction(0.2));
  const std::string alphabet = " .bcefhiknoqrtuwx";  // the distinct characters, sorted
  EXPECT_EQ(train->num_classes(), static_cast<int64_t>(alphabet.size()));
  EXPECT_EQ(train->input_shape(), std::vector<int64_t>{8});
  EXPECT_EQ(train->tokens().numel() + valid->tokens().numel(), static_cast<int64_t>(text.size()));
  EXPECT_EQ(valid->size(), (valid->tokens().numel() - 1) / 8);
  // Validation windows sit where their index says; the target is the input one character on.
  const Batch b = valid->get_batch(torch::tensor({int64_t{0}, int64_t{3}}));
  const std::string held_out = text.substr(text.size() - static_cast<std::size_t>(valid->tokens().numel()));
  EXPECT_EQ(decode(b.input[1], alphabet), held_out.substr(24, 8));
  EXPECT_EQ(decode(b.target[1], alphabet), held_out.substr(25, 8));
  EXPECT_TRUE(valid->get_batch(torch::tensor({int64_t{3}})).input.equal(b.input[1].unsqueeze(0)));
  // Training windows start at a random offset below the context drawn from (seed, epoch, index): the
  // same index in another epoch, another window; in the same epoch, the same one (a resume sees it).
  bool moved = false;
  const at::Tensor first = train->get_epoch_batch(torch::tensor({int64_t{5}}), 0).input;
  for (int epoch = 1; epoch < 20 && !moved; ++epoch) {
    moved = !train->get_epoch_batch(torch::tensor({int64_t{5}}), epoch).input.equal(first);
  }
  EXPECT_TRUE(moved);
  EXPECT_TRUE(train->get_epoch_batch(torch::tensor({int64_t{5}}), 0).input.equal(first));
  EXPECT_EQ(train->tokens_per_example(), 8);
  const Batch t = train->get_batch(torch::arange(train->size()));
  EXPECT_TRUE(t.input.slice(1, 1).equal(t.target.slice(1, 0, 7)));
  EXPECT_EQ(t.input.max().item<int64_t>() < train->num_classes(), true);
}

TEST(Text, BytesAFolderAndBadInput) {
  const testing::TempDir tmp("text_folder");
  const fs::path dir = tmp.path();
  write_file(dir / "b", std::string(300, 'b'));
  write_file(dir / "a", std::string(300, 'a'));
  write_file(dir / "a.dat", std::string(300, 'z'));  // fortune's index: skipped
  fs::create_symlink(dir / "a", dir / "a.u8");       // fortune's links: skipped
  auto [train, valid] =
      load_text(dir.string(), TextOptions().context(16).tokens(TextTokens::kBytes).validation_fraction(0.5));
  EXPECT_EQ(train->num_classes(), 256);
  EXPECT_EQ(train->tokens().numel() + valid->tokens().numel(), 600);  // a then b, nothing else
  EXPECT_EQ(train->tokens()[0].item<int64_t>(), 'a');
  EXPECT_EQ(valid->tokens()[-1].item<int64_t>(), 'b');

  EXPECT_THAT(error_of([&] { load_text((dir / "missing").string()); }), HasSubstr("missing: no such file or folder"));
  EXPECT_THAT(error_of([&] { load_text(dir.string(), TextOptions().context(400)); }),
              HasSubstr("are too few for windows of 400"));
  EXPECT_THROW(TextDataset(torch::zeros({4}, torch::kLong), 4, 2, false, 0), std::invalid_argument);
}

}  // namespace
}  // namespace baton
