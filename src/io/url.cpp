#include "baton/io/url.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include "baton/io/file.h"

namespace baton {
namespace {

constexpr std::uint64_t kToTheEnd = std::numeric_limits<std::uint64_t>::max();
constexpr size_t kLocalChunk = 1 << 20;

// One handle a thread, kept: its connections are reused from one request to the next.
CURL* thread_handle() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  struct Handle {
    CURL* curl = curl_easy_init();
    ~Handle() {
      if (curl) curl_easy_cleanup(curl);
    }
  };
  thread_local Handle handle;
  if (!handle.curl) throw FileError("libcurl: cannot make a transfer handle");
  return handle.curl;
}

// One attempt's state, seen by the write callback.
struct Attempt {
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* sink = nullptr;
  std::uint64_t from = 0;       // the first byte asked for
  std::uint64_t left = 0;       // bytes still wanted (kToTheEnd: all)
  std::uint64_t skip = 0;       // bytes of a whole-file answer (200) before `from`
  std::uint64_t got = 0;        // bytes given to the sink
  bool answer_checked = false;  // 200 or 206 looked at
  bool stopped = false;         // the sink said stop, or all that was wanted came
};

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const size_t bytes = size * count;
  std::string_view piece(data, bytes);
  if (!a.answer_checked) {  // a server that ignores Range sends the whole file
    long code = 0;
    curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &code);
    a.skip = code == 200 ? a.from : 0;
    a.answer_checked = true;
  }
  const std::uint64_t skipped = std::min<std::uint64_t>(a.skip, piece.size());
  piece.remove_prefix(skipped);
  a.skip -= skipped;
  if (a.left != kToTheEnd && piece.size() > a.left) piece = piece.substr(0, a.left);
  if (!piece.empty()) {
    a.got += piece.size();
    if (a.left != kToTheEnd) a.left -= piece.size();
    if (!(*a.sink)(piece)) a.stopped = true;
  }
  if (a.left == 0) a.stopped = true;
  return a.stopped ? 0 : bytes;  // 0 ends the transfer
}

// A failure worth retrying: the server may come back.
bool passing(CURLcode rc, long code) {
  if (rc == CURLE_HTTP_RETURNED_ERROR) return code >= 500 || code == 408 || code == 429;
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_PARTIAL_FILE ||
         rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
}

std::string describe(CURLcode rc, long code) {
  if (rc != CURLE_HTTP_RETURNED_ERROR) return curl_easy_strerror(rc);
  const char* reason = code == 404   ? " (not found)"
                       : code == 403 ? " (forbidden)"
                       : code == 401 ? " (unauthorized)"
                       : code == 410 ? " (gone)"
                                     : "";
  return "HTTP " + std::to_string(code) + reason;
}

void set_common(CURL* curl, const std::string& url) {
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stall of 30 s is a broken connection
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "baton");
}

void set_request(CURL* curl, const std::string& url, std::uint64_t from, std::uint64_t left, Attempt& attempt) {
  set_common(curl, url);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
  if (from > 0 || left != kToTheEnd) {
    const std::string range =
        std::to_string(from) + "-" + (left == kToTheEnd ? std::string() : std::to_string(from + left - 1));
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());  // copied by libcurl
  }
}

std::chrono::steady_clock::time_point deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// After a failed attempt: throws when it will not pass or the time is up, else waits (and doubles
// the next wait).
void retry_or_throw(const std::string& url, CURLcode rc, long code, std::uint64_t at, const UrlOptions& options,
                    std::chrono::steady_clock::time_point deadline, double& wait) {
  std::string why = url;
  why.append(": ").append(describe(rc, code));
  if (!passing(rc, code)) throw FileError(why);
  if (std::chrono::steady_clock::now() + std::chrono::duration<double>(wait) > deadline) {
    why.append(" at byte ").append(std::to_string(at)).append(" (retried for ");
    throw FileError(why.append(std::to_string(static_cast<int>(options.retry_seconds))).append(" s)"));
  }
  spdlog::warn("{} at byte {}; retrying", why, at);
  std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  wait = std::min(wait * 2, 2.0);
}

// "ETag: ..." and "Last-Modified: ..." of a HEAD answer.
size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& info = *static_cast<UrlInfo*>(user);
  const std::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    if (name == "etag") info.etag = value;
    if (name == "last-modified") info.modified = value;
  }
  return size * count;
}

// Bytes [from, from + length) of `url` (length kToTheEnd: to its end) to `sink`, each attempt after
// a passing failure resuming at the first byte not yet received.
void fetch(const std::string& url, std::uint64_t from, std::uint64_t length,
           const std::function<bool(std::string_view)>& sink, const UrlOptions& options) {
  CURL* curl = thread_handle();
  const auto deadline = deadline_after(options.retry_seconds);
  double wait = 0.1;
  std::uint64_t at = from, left = length;
  while (true) {
    Attempt attempt{curl, &sink, at, left};
    set_request(curl, url, at, left, attempt);
    const CURLcode rc = curl_easy_perform(curl);
    at += attempt.got;
    if (left != kToTheEnd) left -= attempt.got;
    if (attempt.stopped) return;
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OK) {
      if (left == kToTheEnd || left == 0) return;
      throw FileError(url + ": ends at byte " + std::to_string(at) + ", before byte " + std::to_string(at + left));
    }
    if (rc == CURLE_HTTP_RETURNED_ERROR && code == 416) {
      throw FileError(url + ": ends before byte " + std::to_string(at + 1));
    }
    retry_or_throw(url, rc, code, at, options, deadline, wait);
  }
}

// pread until `length` bytes came; false at the end of the file.
bool read_at(int fd, char* out, size_t length, std::uint64_t offset, const std::string& path) {
  while (length > 0) {
    const ssize_t n = ::pread(fd, out, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw FileError(path + ": cannot be read (" + std::strerror(errno) + ")");
    if (n == 0) return false;
    out += n, length -= static_cast<size_t>(n), offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

size_t on_answer(char* data, size_t size, size_t count, void* user) {
  auto& body = *static_cast<std::string*>(user);
  constexpr size_t kMaxAnswer = 16 << 20;  // an API's answer; more is a server gone wrong
  if (body.size() + size * count > kMaxAnswer) return 0;
  body.append(data, size * count);
  return size * count;
}

// Called by libcurl about once a second and at each chunk: nonzero ends the transfer.
int on_progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

}  // namespace

HttpAnswer http_request(const std::string& method, const std::string& url, const std::string& body,
                        const std::string& content_type, const std::vector<std::string>& headers,
                        double timeout_seconds, const std::atomic<bool>* cancel) {
  CURL* curl = thread_handle();
  set_common(curl, url);
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 0L);  // every status is an answer
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 0L);
  const auto ms = static_cast<long>(std::max(1.0, timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_slist* list = nullptr;
  for (const auto& header : headers) list = curl_slist_append(list, header.c_str());
  if (method != "GET") list = curl_slist_append(list, ("Content-Type: " + content_type).c_str());
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for a large body
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  if (cancel != nullptr) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, cancel);
  }
  HttpAnswer answer;
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_answer);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    answer.error = rc == CURLE_ABORTED_BY_CALLBACK ? "given up"
                   : rc == CURLE_OPERATION_TIMEDOUT
                       ? "no answer in " + std::to_string(static_cast<int>(std::ceil(timeout_seconds))) + " s"
                       : curl_easy_strerror(rc);
    return answer;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

UrlInfo url_info(const std::string& url, const UrlOptions& options) {
  CURL* curl = thread_handle();
  const auto deadline = deadline_after(options.retry_seconds);
  double wait = 0.1;
  while (true) {
    UrlInfo info;
    set_common(curl, url);
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &info);
    const CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OK) {
      curl_off_t length = -1;
      curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
      info.size = length >= 0 ? static_cast<std::uint64_t>(length) : kToTheEnd;
      return info;
    }
    retry_or_throw(url, rc, code, 0, options, deadline, wait);
  }
}

bool is_url(std::string_view source) { return source.starts_with("http://") || source.starts_with("https://"); }

std::string read_range(const std::string& source, std::uint64_t offset, std::uint64_t length,
                       const UrlOptions& options) {
  if (length > options.max_bytes) {
    throw FileError(source + ": a read of " + human_bytes(length) + " (at most " + human_bytes(options.max_bytes) +
                    ")");
  }
  std::string out;
  if (is_url(source)) {
    out.reserve(length);
    if (length > 0) {
      fetch(
          source, offset, length, [&](std::string_view piece) { return out.append(piece), true; }, options);
    }
    return out;
  }
  ReadableFile file(source, {.what = "the file", .max_bytes = options.max_bytes});
  if (offset > file.size() || length > file.size() - offset) {
    throw FileError(source + ": ends at byte " + std::to_string(file.size()) + ", before byte " +
                    std::to_string(offset + length));
  }
  out.resize(length);
  if (!read_at(file.fd(), out.data(), length, offset, source)) {
    throw FileError(source + ": ends before byte " + std::to_string(offset + length) + " (it shrank)");
  }
  return out;
}

void read_stream(const std::string& source, const std::function<bool(std::string_view)>& sink,
                 const UrlOptions& options) {
  if (is_url(source)) return fetch(source, 0, kToTheEnd, sink, options);
  ReadableFile file(source, {.what = "the file", .max_bytes = options.max_bytes});
  std::string buffer(kLocalChunk, '\0');
  for (std::uint64_t offset = 0; offset < file.size();) {
    const size_t n = static_cast<size_t>(std::min<std::uint64_t>(kLocalChunk, file.size() - offset));
    if (!read_at(file.fd(), buffer.data(), n, offset, source)) {
      throw FileError(source + ": ends before byte " + std::to_string(offset + n) + " (it shrank)");
    }
    if (!sink(std::string_view(buffer.data(), n))) return;
    offset += n;
  }
}

}  // namespace baton
