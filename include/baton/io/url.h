// Bytes of a file a user names by path or by http:// or https:// URL, read one way for both: a range
// (one HTTP Range request for a URL) or the whole of it streamed. A URL's connection that breaks, or
// a server that answers 5xx or not at all, is retried from the last byte received until
// `retry_seconds` pass, so a server restarted mid-read costs a wait, not data; 4xx is an error
// at once.
//
//   std::string head = baton::read_range("http://host/train-000000.tar", 0, 512);
//   baton::read_stream("train-000000.tar", [&](std::string_view chunk) { scan(chunk); return true; });
//
// Errors are FileError, one line naming the file or URL: "http://host/x.tar: HTTP 404 (not found)".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

struct UrlOptions {
  // How long a URL's failures that may pass (a refused or broken connection, 5xx, a transfer below
  // 1 KiB/s for retry_seconds, at most 30 s) are retried, with waits from 0.1 s doubling to 2 s,
  // before the error; each MiB received starts the window again.
  double retry_seconds = 60;
  // A local file: at most this large.
  std::uint64_t max_bytes = 1ull << 40;
};

// http:// or https://.
bool is_url(std::string_view source);

// Ends every transfer of this process within about a second, for good (their reads throw
// FileError "transfer stopped"): what a SIGTERM handler calls, so that a stalled server never keeps
// a stopping process waiting. Async-signal-safe.
void stop_transfers() noexcept;

// What a URL's HEAD answer says of its current version: the size (UINT64_MAX when not given), the
// ETag and Last-Modified headers (empty when not given). Retried as a read is.
struct UrlInfo {
  std::uint64_t size = 0;
  std::string etag;
  std::string modified;
};
UrlInfo url_info(const std::string& url, const UrlOptions& options = {});

// Bytes [offset, offset + length) of a file or URL; fewer is an error ("ends at byte N").
std::string read_range(const std::string& source, std::uint64_t offset, std::uint64_t length,
                       const UrlOptions& options = {});

// The whole file or URL in order, a chunk at a time, to `sink`; sink returns false to stop early.
void read_stream(const std::string& source, const std::function<bool(std::string_view)>& sink,
                 const UrlOptions& options = {});

// One HTTP request, one attempt (the caller decides on retries, as a logger that must never wait
// does): `method` GET, POST or PUT, `body` sent as `content_type`, `headers` as "Name: value", the
// whole exchange bounded by `timeout_seconds`, and ended early once `*cancel` turns true. The answer of any status
// comes back; `error` is set (and `status` 0) only when none came: "connection refused", "timed out after 10 s".
struct HttpAnswer {
  long status = 0;
  std::string body;
  std::string error;
  // Worth trying again later: no answer, 5xx, 408 or 429.
  bool passing() const { return status == 0 || status >= 500 || status == 408 || status == 429; }
  bool ok() const { return status >= 200 && status < 300; }
};
HttpAnswer http_request(const std::string& method, const std::string& url, const std::string& body = {},
                        const std::string& content_type = "application/json",
                        const std::vector<std::string>& headers = {}, double timeout_seconds = 10,
                        const std::atomic<bool>* cancel = nullptr);

}  // namespace baton
