// The tar scanner (src/data/tar_scanner.cpp): every kind of header counts against the bound; a member
// claiming a terabyte is refused at its header.
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

TEST(WebDatasetHostile, EveryKindOfTarHeaderCountsAgainstTheBound) {
  TempDir dir("webdataset_headers");
  std::string tar;
  for (int i = 0; i < 30; ++i) tar += tar_header("d" + std::to_string(i) + "/", '5', 0);  // folders
  write_file(dir / "s.tar", tar + std::string(1024, '\0'));
  const auto options = WebDatasetOptions().max_tar_headers(20);
  EXPECT_EQ(
      error_of([&] { WebDataset::open({(dir / "s.tar").string()}, options); }),
      (dir / "s.tar").string() + ": more than 20 tar headers in one shard (max_tar_headers); split it into shards");
}

TEST(WebDatasetHostile, AMemberClaimingATerabyteIsRefusedAtItsHeaderNotStreamedThrough) {
  // The header, then nothing: a scanner that read through the claim would wait on the stall.
  const testing::ScriptedServer server(
      [](const testing::ScriptedServer::Request&, testing::ScriptedServer::Reply& out) {
        out.send("HTTP/1.1 200 OK\r\nContent-Length: 9000000000\r\n\r\n" + tar_header("a.png", '0', 8000000000ull));
        out.stall(60);
      });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([&] {
                WebDataset::open({server.url("/s.tar")}, WebDatasetOptions().cache_index(false).retry_seconds(30));
              }),
              HasSubstr("member a.png claims 7.5 GiB, more than the 1 GiB a WebDataset member may have"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  // The refusal was thrown from inside the transfer: this thread's next transfer still works (an
  // exception through libcurl's frames left its handle broken: "Failed initialization").
  EXPECT_THAT(error_of([] { read_range("http://127.0.0.1:9/x.tar", 0, 4, {.retry_seconds = 0.3}); }),
              HasSubstr("no server answers there"));
}

}  // namespace
}  // namespace baton
