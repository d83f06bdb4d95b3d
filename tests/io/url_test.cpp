// Reading a URL from a server that does not play fair: one that stalls mid-body, trickles a byte a
// second, or answers bytes other than those asked for. Every wait is bounded by retry_seconds, a
// server's fault is named as the server's, and a stop request ends a transfer at once.
#include "baton/io/url.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/scripted_server.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::ScriptedServer;
using testing::TempDir;
using testing::write_file;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A 1000-byte file: its first 10 bytes, then nothing (the connection held open).
void stalls(const ScriptedServer::Request&, ScriptedServer::Reply& out) {
  out.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(10, 'x'));
  out.stall(120);
}

TEST(UrlDeadlines, AServerThatStallsMidBodyIsGivenUpAfterRetrySeconds) {
  const ScriptedServer server(stalls);
  const auto start = Clock::now();
  EXPECT_THAT(testing::error_of([&] { read_range(server.url("/x.tar"), 0, 1000, {.retry_seconds = 2}); }),
              HasSubstr("stalled"));
  EXPECT_LT(seconds_since(start), 8.0);  // once 112 s for retry_seconds 3
}

TEST(UrlDeadlines, AServerThatTricklesAByteASecondIsNeverWaitedOnLong) {
  const ScriptedServer server([](const ScriptedServer::Request&, ScriptedServer::Reply& out) {
    out.send("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
    out.trickle(std::string(100000, 'y'), 0.5);
  });
  const auto start = Clock::now();
  EXPECT_THAT(testing::error_of([&] { read_range(server.url("/x.tar"), 0, 100000, {.retry_seconds = 2}); }),
              HasSubstr("stalled (below 1 KiB/s"));
  EXPECT_LT(seconds_since(start), 8.0);
}

TEST(UrlDeadlines, BytesOtherThanThoseAskedForAreTheServersFaultNotAShardCutShort) {
  const ScriptedServer server([](const ScriptedServer::Request&, ScriptedServer::Reply& out) {
    out.answer(206, std::string(100, 'z'), "Content-Range: bytes 0-99/5000\r\n");  // asked for 1000-1099
  });
  const std::string error =
      testing::error_of([&] { read_range(server.url("/x.tar"), 1000, 100, {.retry_seconds = 1}); });
  EXPECT_THAT(error, HasSubstr("the server answered bytes from 0 (Content-Range 'bytes 0-99/5000') when asked for "
                               "bytes from 1000: the server's fault, not the shard's"));
  EXPECT_EQ(server.requests().size(), 1u);  // not retried: it would answer the same
}

TEST(UrlDeadlines, AServersMessageOfControlCharactersIsWrittenOut) {
  const ScriptedServer server([](const ScriptedServer::Request&, ScriptedServer::Reply& out) {
    out.answer(206, "", "Content-Range: \x1b[2Jbytes 7-\r\n");
  });
  const std::string error = testing::error_of([&] { read_range(server.url("/x"), 0, 10, {.retry_seconds = 1}); });
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
}

// stop_transfers() is for good: in a process of its own (a death test's), as a SIGTERM handler
// calls it.
TEST(UrlDeadlinesDeathTest, AStopRequestEndsAStalledTransferAtOnce) {
  EXPECT_EXIT(
      {
        const ScriptedServer server(stalls);
        std::thread stopper([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          stop_transfers();
        });
        const auto start = Clock::now();
        const std::string error =
            testing::error_of([&] { read_range(server.url("/x.tar"), 0, 1000, {.retry_seconds = 60}); });
        stopper.join();
        const bool prompt = seconds_since(start) < 3.0;
        std::fprintf(stderr, "%s after %.1f s\n", error.c_str(), seconds_since(start));
        std::_Exit(prompt && error.find("transfer stopped at byte 10") != std::string::npos ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "transfer stopped");
}

TEST(Url, ARangeOfALocalFileIsThoseBytesAndPastTheEndIsAnError) {
  TempDir dir("url");
  write_file(dir / "f.bin", "0123456789");
  EXPECT_FALSE(is_url((dir / "f.bin").string()));
  EXPECT_TRUE(is_url("http://127.0.0.1/x.tar"));
  EXPECT_EQ(read_range((dir / "f.bin").string(), 3, 4), "3456");
  EXPECT_EQ(error_of([&] { read_range((dir / "f.bin").string(), 8, 4); }),
            (dir / "f.bin").string() + ": ends at byte 10, before byte 12");
  std::string streamed;
  read_stream((dir / "f.bin").string(), [&](std::string_view piece) { return streamed.append(piece), true; });
  EXPECT_EQ(streamed, "0123456789");
  // A URL nothing answers is retried until retry_seconds pass, then named.
  EXPECT_THAT(
      error_of([] { read_range("http://127.0.0.1:9/x.tar", 0, 4, {.retry_seconds = 0.3}); }),
      HasSubstr("http://127.0.0.1:9/x.tar: no server answers there (connection refused or unreachable) at byte 0 "
                "(retried for 0 s)"));
}

}  // namespace
}  // namespace baton
