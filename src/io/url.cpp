#include "baton/io/url.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include "baton/io/file.h"
#include "baton/io/text.h"

namespace baton {
namespace {

constexpr std::uint64_t kToTheEnd = std::numeric_limits<std::uint64_t>::max();
constexpr size_t kLocalChunk = 1 << 20;
// A transfer slower than this over its stall window (retry_seconds, at most 30 s) is a broken one:
// a server that trickles a byte a second is never waited on for long.
constexpr long kMinBytesPerSecond = 1024;
// Received since the last failure, this much restarts retry_seconds' window: a long transfer that
// breaks now and then goes on, one that never gets anywhere ends.
constexpr std::uint64_t kProgressBytes = 1 << 20;

// Set by stop_transfers() (a signal handler): every transfer ends within about a second.
std::atomic<bool> g_stop_transfers{false};

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
  std::string content_range;    // the answer's Content-Range header
  std::string server_fault;     // an answer that is not the one asked for (not retried)
  std::exception_ptr thrown;    // what the sink threw: never through libcurl's frames (its handle would break)
};

// "bytes FIRST-LAST/TOTAL": the first byte, or nullopt when the header does not say one.
std::optional<std::uint64_t> range_start(const std::string& header) {
  const std::string_view h(header);
  if (!h.starts_with("bytes ")) return std::nullopt;
  std::uint64_t v = 0;
  size_t i = 6;
  for (; i < h.size() && std::isdigit(static_cast<unsigned char>(h[i])) && i < 26; ++i) v = v * 10 + (h[i] - '0');
  if (i == 6 || i >= h.size() || h[i] != '-') return std::nullopt;
  return v;
}

// The Content-Range header of an answer (the last one: after a redirect, the answer's own).
size_t on_range_header(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::string_view line(data, size * count);
  if (line.size() > 14 && strncasecmp(line.data(), "content-range:", 14) == 0) {
    std::string_view value = line.substr(14);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    a.content_range = std::string(value.substr(0, 200));
  } else if (line.starts_with("HTTP/")) {
    a.content_range.clear();  // a new answer's headers (a redirect's, then the file's)
  }
  return size * count;
}

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const size_t bytes = size * count;
  std::string_view piece(data, bytes);
  if (!a.answer_checked) {  // a server that ignores Range sends the whole file
    long code = 0;
    curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &code);
    a.skip = code == 200 ? a.from : 0;
    a.answer_checked = true;
    if (code == 206) {  // the bytes asked for, or the server's fault: never taken for the shard's
      const auto start = range_start(a.content_range);
      if (!start || *start != a.from) {
        a.server_fault = "the server answered bytes from " + (start ? std::to_string(*start) : std::string("?")) +
                         " (Content-Range '" + one_line(a.content_range, 80) + "') when asked for bytes from " +
                         std::to_string(a.from) + ": the server's fault, not the shard's";
        return 0;
      }
    }
  }
  const std::uint64_t skipped = std::min<std::uint64_t>(a.skip, piece.size());
  piece.remove_prefix(skipped);
  a.skip -= skipped;
  if (a.left != kToTheEnd && piece.size() > a.left) piece = piece.substr(0, a.left);
  if (!piece.empty()) {
    a.got += piece.size();
    if (a.left != kToTheEnd) a.left -= piece.size();
    try {
      if (!(*a.sink)(piece)) a.stopped = true;
    } catch (...) {  // rethrown once curl_easy_perform returned
      a.thrown = std::current_exception();
      return 0;
    }
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

// A transfer that failed, in baton's words (libcurl's own texts name its internals).
std::string transfer_problem(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT: return "no server answers there (connection refused or unreachable)";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return "the host's name does not resolve";
    case CURLE_OPERATION_TIMEDOUT: return "no answer in time";
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return "the connection broke";
    case CURLE_TOO_MANY_REDIRECTS: return "more than 5 redirects";
    case CURLE_UNSUPPORTED_PROTOCOL: return "not http:// or https://";
    case CURLE_URL_MALFORMAT: return "not a well-formed URL";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE: return "the TLS connection failed (a certificate not trusted, or not TLS)";
    case CURLE_ABORTED_BY_CALLBACK: return "stopped";
    default: return "the transfer failed (transfer error " + std::to_string(static_cast<int>(rc)) + ")";
  }
}

std::string describe(CURLcode rc, long code) {
  if (rc != CURLE_HTTP_RETURNED_ERROR) return transfer_problem(rc);
  const char* reason = code == 404   ? " (not found)"
                       : code == 403 ? " (forbidden)"
                       : code == 401 ? " (unauthorized)"
                       : code == 410 ? " (gone)"
                                     : "";
  return "HTTP " + std::to_string(code) + reason;
}

// Called by libcurl about once a second and at each chunk: nonzero ends the transfer (a signal asked
// every transfer to stop, or a cancel flag turned true).
int on_progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  if (g_stop_transfers.load(std::memory_order_relaxed)) return 1;
  return cancel != nullptr && static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
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
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, kMinBytesPerSecond);  // a stall is a broken connection
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "baton");
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, nullptr);
}

// How long a transfer may go below kMinBytesPerSecond: retry_seconds, from 1 to 30 s.
long stall_seconds(const UrlOptions& options) {
  return static_cast<long>(std::clamp(std::ceil(options.retry_seconds), 1.0, 30.0));
}

void set_request(CURL* curl, const std::string& url, std::uint64_t from, std::uint64_t left, Attempt& attempt,
                 const UrlOptions& options) {
  set_common(curl, url);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, stall_seconds(options));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, stall_seconds(options));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_range_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &attempt);
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

[[noreturn]] void stopped(const std::string& url, std::uint64_t at) {
  throw FileError(url + ": transfer stopped at byte " + std::to_string(at) + " (the process was asked to stop)");
}

// After a failed attempt: throws when it will not pass or the time is up, else waits (and doubles
// the next wait); a stop request ends the wait at once.
void retry_or_throw(const std::string& url, CURLcode rc, long code, std::uint64_t at, const UrlOptions& options,
                    std::chrono::steady_clock::time_point deadline, double& wait) {
  if (g_stop_transfers.load()) stopped(url, at);
  std::string why = url;
  why.append(": ").append(rc == CURLE_OPERATION_TIMEDOUT
                              ? "stalled (below 1 KiB/s for " + std::to_string(stall_seconds(options)) + " s)"
                              : describe(rc, code));
  if (!passing(rc, code)) throw FileError(why);
  if (std::chrono::steady_clock::now() + std::chrono::duration<double>(wait) > deadline) {
    why.append(" at byte ").append(std::to_string(at)).append(" (retried for ");
    throw FileError(why.append(std::to_string(static_cast<int>(options.retry_seconds))).append(" s)"));
  }
  spdlog::warn("{} at byte {}; retrying", why, at);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait);
  while (std::chrono::steady_clock::now() < until) {
    if (g_stop_transfers.load()) stopped(url, at);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
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
  auto deadline = deadline_after(options.retry_seconds);
  double wait = 0.1;
  std::uint64_t at = from, left = length, since_failure = 0;
  while (true) {
    Attempt attempt;
    attempt.curl = curl;
    attempt.sink = &sink;
    attempt.from = at;
    attempt.left = left;
    set_request(curl, url, at, left, attempt, options);
    const CURLcode rc = curl_easy_perform(curl);
    if (attempt.thrown) std::rethrow_exception(attempt.thrown);
    at += attempt.got;
    if (left != kToTheEnd) left -= attempt.got;
    if (attempt.stopped) return;
    if (!attempt.server_fault.empty()) throw FileError(url + ": " + attempt.server_fault);
    if (rc == CURLE_ABORTED_BY_CALLBACK && g_stop_transfers.load()) stopped(url, at);
    since_failure += attempt.got;
    if (since_failure >= kProgressBytes) {  // it got somewhere: retry_seconds start again from here
      deadline = deadline_after(options.retry_seconds);
      since_failure = 0;
    }
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
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  HttpAnswer answer;
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_answer);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    answer.error = rc == CURLE_ABORTED_BY_CALLBACK ? (g_stop_transfers.load() ? "stopped" : "given up")
                   : rc == CURLE_OPERATION_TIMEDOUT
                       ? "no answer in " + std::to_string(static_cast<int>(std::ceil(timeout_seconds))) + " s"
                       : transfer_problem(rc);
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
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, stall_seconds(options));  // a HEAD answer is small
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, stall_seconds(options));
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

void stop_transfers() noexcept { g_stop_transfers.store(true, std::memory_order_relaxed); }

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
