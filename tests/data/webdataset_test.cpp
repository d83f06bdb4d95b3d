// WebDataset shards (src/data/webdataset.cpp): braces expand, samples equal the image folder's, an
// epoch reads each chunk once, bad shards and hostile files are named.
#include "baton/data/webdataset.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/dataloader.h"
#include "baton/data/images.h"
#include "baton/io/file.h"
#include "baton/io/url.h"
#include "common/scripted_server.h"
#include "common/test_util.h"
#include "data/webdataset_fixtures.h"
#include "fuzz/tar_stream.h"

namespace baton {
namespace {

using namespace webdataset_fixtures;  // NOLINT(google-build-using-namespace)

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::write_file;
using Members = std::vector<std::pair<std::string, std::string>>;

// A tar file (ustar, as GNU tar and Python's tarfile write them) of (name, bytes) members.
std::string tar_of(const Members& members) {
  std::string out;
  for (const auto& [name, bytes] : members) {
    out += tar_header(name, '0', bytes.size()) + bytes + std::string((512 - bytes.size() % 512) % 512, '\0');
  }
  return out + std::string(1024, '\0');
}

at::Tensor rgb_picture(int64_t h, int64_t w, int64_t seed) {
  const at::Tensor y = torch::arange(h, torch::kFloat).view({h, 1, 1});
  const at::Tensor x = torch::arange(w, torch::kFloat).view({1, w, 1});
  const at::Tensor c = torch::arange(3, torch::kFloat).view({1, 1, 3});
  return (128 + 60 * torch::sin((x + 7 * c + static_cast<double>(seed)) / 5.0) + 50 * torch::cos((y - c) / 7.0))
      .clamp(0, 255)
      .to(torch::kByte)
      .contiguous();
}

ImageFolderOptions small_images() {
  return ImageFolderOptions()
      .image_size(16)
      .transforms(R"([{"random_resized_crop": {"scale": [0.3, 1.0]}}, "horizontal_flip"])"_json)
      .seed(5)
      .workers(2);
}

// 12 PNG pictures in 3 class folders, and the same files as two shards of KEY.png + KEY.cls samples
// in the folder's (sorted) order.
struct Pictures {
  TempDir dir{"webdataset"};
  std::vector<std::string> shards;
  Pictures() {
    Members first, second;
    for (int i = 0; i < 12; ++i) {
      const std::string cls = "c" + std::to_string(i % 3);
      std::filesystem::create_directories(dir / "folder" / cls);
      const std::string key = cls + "/img" + std::to_string(i / 3);
      const auto file = dir / "folder" / (key + ".png");
      write_png(file.string(), rgb_picture(20 + i, 24 + 2 * i, i));
      Members& shard = (i % 3) * 4 + i / 3 < 7 ? first : second;
      shard.push_back({key + ".png", read_file(file.string())});
      shard.push_back({key + ".cls", std::to_string(i % 3) + "\n"});
    }
    // Members in the folder's order: class by class.
    for (Members* m : {&first, &second}) {
      std::sort(m->begin(), m->end(), [](const auto& a, const auto& b) {
        return a.first.substr(0, a.first.find('.')) < b.first.substr(0, b.first.find('.'));
      });
    }
    for (int s = 0; s < 2; ++s) {
      shards.push_back((dir / ("train-00000" + std::to_string(s) + ".tar")).string());
      write_file(shards.back(), tar_of(s == 0 ? first : second));
    }
  }
};

TEST(WebDataset, BracesExpandAsWebDatasetsDo) {
  EXPECT_EQ(expand_braces("s/train-{000..002}.tar"),
            (std::vector<std::string>{"s/train-000.tar", "s/train-001.tar", "s/train-002.tar"}));
  EXPECT_EQ(expand_braces("{a,b}-{8..10}"), (std::vector<std::string>{"a-8", "a-9", "a-10", "b-8", "b-9", "b-10"}));
  EXPECT_EQ(expand_braces("plain.tar"), (std::vector<std::string>{"plain.tar"}));
  EXPECT_THAT(error_of([] { expand_braces("x-{000..}.tar"); }), HasSubstr("not two whole numbers"));
  EXPECT_THAT(error_of([] { expand_braces("x-{3..1}.tar"); }), HasSubstr("runs backwards"));
  EXPECT_THAT(error_of([] { expand_braces("x-{0..9.tar"); }), HasSubstr("do not pair"));
  EXPECT_THAT(error_of([] { expand_braces("x-{0..9999999}.tar"); }), HasSubstr("more than 1,000,000"));
}

TEST(WebDataset, SamplesAreTheSameExamplesAsTheImageFolderOfTheSameFiles) {
  Pictures p;
  const auto folder = ImageFolder::from_dir((p.dir / "folder").string(), small_images());
  const auto shards = WebDataset::open(p.shards, WebDatasetOptions().images(small_images()).shuffle_buffer(4));
  ASSERT_EQ(shards->size(), 12);
  EXPECT_EQ(shards->num_classes(), 3);
  EXPECT_EQ(shards->sample_name(7), p.shards[1] + ": c1/img3.png");
  for (int64_t epoch : {0, 3}) {
    const at::Tensor all = torch::arange(12);
    const Batch a = folder->get_epoch_batch(all, epoch), b = shards->get_epoch_batch(all, epoch);
    EXPECT_TRUE(torch::equal(a.input, b.input)) << "epoch " << epoch;
    EXPECT_TRUE(torch::equal(a.target, b.target));
  }
}

TEST(WebDataset, AnEpochReadsEachChunkOnceInAnOrderFromSeedAndEpochForAnyWorkers) {
  Pictures p;
  const auto options = WebDatasetOptions().shuffle_buffer(3);
  const auto data = WebDataset::open(p.shards, WebDatasetOptions(options).images(small_images().workers(1)));
  const at::Tensor o1 = data->epoch_order(1, 17, true);
  EXPECT_TRUE(torch::equal(std::get<0>(o1.sort()), torch::arange(12)));  // each sample once
  EXPECT_TRUE(torch::equal(o1, data->epoch_order(1, 17, true)));
  EXPECT_FALSE(torch::equal(o1, data->epoch_order(2, 17, true)));
  EXPECT_TRUE(torch::equal(data->epoch_order(1, 17, false), torch::arange(12)));
  std::vector<at::Tensor> seen;
  for (int workers : {1, 2, 4}) {
    const auto d = WebDataset::open(p.shards, WebDatasetOptions(options).images(small_images().workers(workers)));
    DataLoader loader(d, DataLoaderOptions().batch_size(3).seed(17));
    loader.start_epoch(1);
    std::vector<at::Tensor> batches;
    while (auto b = loader.next()) batches.push_back(b->input);
    // Chunks of 3 samples (7 + 5 samples: 3 + 3 + 1, 3 + 2), each read once in the epoch.
    EXPECT_EQ(d->chunk_reads(), 5) << workers << " workers";
    seen.push_back(torch::cat(batches));
  }
  EXPECT_TRUE(torch::equal(seen[0], seen[1]));
  EXPECT_TRUE(torch::equal(seen[0], seen[2]));
}

TEST(WebDataset, BadShardsAndSamplesNameTheShardAndMember) {
  TempDir dir("webdataset_bad");
  const std::string png = [&] {
    write_png((dir / "p.png").string(), rgb_picture(20, 20, 0));
    return read_file((dir / "p.png").string());
  }();
  const auto open = [&](const Members& members, BadFiles bad = BadFiles::kError) {
    write_file(dir / "s.tar", tar_of(members));
    return WebDataset::open({(dir / "s.tar").string()}, WebDatasetOptions().images(small_images().bad_files(bad)));
  };
  const std::string shard = (dir / "s.tar").string();
  EXPECT_EQ(error_of([&] {
              open({{"a.png", png}, {"b.png", png}, {"b.cls", "1"}});
            }),
            shard + ": a.png has no a.cls (a sample is KEY.jpg|png and KEY.cls)");
  EXPECT_EQ(error_of([&] { open({{"a.cls", "1"}}); }), shard + ": a.cls has no a.jpg, .jpeg or .png");
  EXPECT_EQ(error_of([&] {
              open({{"a.png", png}, {"a.cls", "cat"}});
            }),
            shard + ": a.cls holds 'cat', not a class index (0, 1, ...)");
  // Skipped, the rest stays, and the skip is reported.
  const auto lenient = open({{"a.png", png}, {"b.png", png}, {"b.cls", "1"}}, BadFiles::kSkip);
  EXPECT_EQ(lenient->size(), 1);
  ASSERT_EQ(lenient->skipped().size(), 1U);
  EXPECT_THAT(lenient->skipped()[0], HasSubstr("a.png has no a.cls"));
  // A pixel error is found when decoded, naming the shard and member.
  EXPECT_EQ(error_of([&] {
              open({{"a.png", "not an image"}, {"a.cls", "0"}})->get_batch(torch::arange(1));
            }),
            shard + ": a.png: not a JPEG or PNG file");
  // Not a tar file, cut short, missing.
  write_file(dir / "junk.tar", std::string(2000, 'x'));
  EXPECT_EQ(error_of([&] { WebDataset::open({(dir / "junk.tar").string()}, WebDatasetOptions()); }),
            (dir / "junk.tar").string() + ": not a tar file (no tar header at byte 0)");
  const std::string whole = tar_of({{"a.png", png}, {"a.cls", "0"}});
  write_file(dir / "cut.tar", whole.substr(0, 700));
  EXPECT_EQ(error_of([&] { WebDataset::open({(dir / "cut.tar").string()}, WebDatasetOptions()); }),
            (dir / "cut.tar").string() + ": truncated: the file ends at byte 700, inside member a.png");
  EXPECT_THAT(error_of([&] { WebDataset::open({(dir / "none.tar").string()}, WebDatasetOptions()); }),
              HasSubstr((dir / "none.tar").string() + ": "));
  // An evaluation shard with a class the training set does not have.
  write_file(dir / "eval.tar", tar_of({{"e.png", png}, {"e.cls", "4"}}));
  EXPECT_EQ(error_of([&] { WebDataset::open({(dir / "eval.tar").string()}, WebDatasetOptions(), 3); }),
            (dir / "eval.tar").string() + ": e.png has label 4 but the training set has 3 classes");
}

// A file server of one shard: HEAD (its size and ETag) and ranges, as nginx answers them.
testing::ScriptedServer serving(const std::string& bytes) {
  return testing::ScriptedServer(
      [bytes](const testing::ScriptedServer::Request& r, testing::ScriptedServer::Reply& out) {
        const std::string etag = "ETag: \"v1\"\r\n";
        if (r.method == "HEAD") {
          out.send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(bytes.size()) + "\r\n" + etag + "\r\n");
          return;
        }
        const size_t range = r.head.find("Range: bytes=");
        if (range == std::string::npos) return (void)out.answer(200, bytes, etag);
        const size_t from = std::stoul(r.head.substr(range + 13));
        const size_t dash = r.head.find('-', range + 13);
        const size_t to = r.head[dash + 1] == '\r' ? bytes.size() - 1 : std::stoul(r.head.substr(dash + 1));
        out.answer(206, bytes.substr(from, to - from + 1),
                   etag + "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(to) + "/" +
                       std::to_string(bytes.size()) + "\r\n");
      });
}

// The fuzzer's corpus (tests/fuzz/corpus/tar_stream: long names, pax paths, a member cut short, a
// claim of 8 GiB, 250 folders, not a tar) through what the fuzzer checks, as a stream and as a file.
TEST(WebDatasetHostile, TheTarStreamFuzzersCorpusHoldsWhatTheFuzzerChecks) {
  std::map<std::string, std::string> outcome;
  const int inputs =
      testing::for_each_corpus_input("tar_stream", [&](const std::string& name, const std::string& bytes) {
        EXPECT_NO_THROW(fuzz::check_tar_stream(bytes)) << name;
        try {
          TarScanner scanner(name, fuzz::kFuzzHeaders);
          scanner.feed(0, std::string_view(bytes).substr(1));
          scanner.finish(bytes.size() - 1);
          outcome[name] = std::to_string(scanner.members().size()) + " members";
        } catch (const TarError& e) {
          outcome[name] = e.what();
        }
      });
  EXPECT_GE(inputs, 8);
  EXPECT_EQ(outcome["samples"], "4 members");
  EXPECT_EQ(outcome["gnu_long_name"], "2 members");
  EXPECT_EQ(outcome["pax_path"], "2 members");
  EXPECT_THAT(outcome["claims_8_gib"], HasSubstr("member big.png claims 8.0 GiB, more than the 1 GiB"));
  EXPECT_THAT(outcome["many_folders"], HasSubstr("more than 200 tar headers in one shard"));
  EXPECT_THAT(outcome["cut_in_a_member"], HasSubstr("truncated: the file ends at byte 900, inside member a.png"));
  EXPECT_THAT(outcome["not_a_tar"], HasSubstr("not a tar file"));
}

TEST(WebDatasetHostile, AKeptIndexWithAlteredLabelsIsFoundOutNotTrainedOn) {
  const Pictures pictures;
  const std::string bytes = read_file(pictures.shards[0]);
  const auto server = serving(bytes);
  TempDir cache("webdataset_kept");
  const auto options = WebDatasetOptions().images(small_images()).index_cache(cache.str()).retry_seconds(5);
  const auto first = WebDataset::open({server.url("/s.tar")}, options);
  const at::Tensor labels = first->get_batch(torch::arange(first->size())).target;
  // The kept index, its first label changed (a member: [name, offset, size, text]).
  std::filesystem::path kept;
  for (const auto& entry : std::filesystem::directory_iterator(cache.path())) kept = entry.path();
  ASSERT_FALSE(kept.empty());
  auto index = nlohmann::json::parse(read_file(kept.string()));
  for (auto& m : index["members"]) {
    if (m[0].get<std::string>().ends_with(".cls")) {
      m[3] = std::to_string((std::stoi(m[3].get<std::string>()) + 1) % 3);
      break;
    }
  }
  write_file(kept, index.dump());
  const auto second = WebDataset::open({server.url("/s.tar")}, options);
  EXPECT_THAT(error_of([&] { second->get_batch(torch::arange(second->size())); }),
              HasSubstr("the shard changed since it was indexed, or its kept index " + kept.string() +
                        " was altered (delete it)"));
  // Offsets past the shard's end: not the shard's index; indexed again, the labels right.
  for (auto& m : index["members"]) m[1] = m[1].get<uint64_t>() + bytes.size();
  write_file(kept, index.dump());
  const auto third = WebDataset::open({server.url("/s.tar")}, options);
  EXPECT_TRUE(torch::equal(third->get_batch(torch::arange(third->size())).target, labels));
}

}  // namespace
}  // namespace baton
