#include "http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace baton::dashboard {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxHeaders = 100;

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::map<std::string, std::string> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    out.emplace(percent_decode(pair.substr(0, eq), true),
                eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true));
  }
  return out;
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 421: return "Misdirected Request";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

// The request line "METHOD TARGET HTTP/1.x" into `out`; false with `why` when it is not one.
bool parse_request_line(std::string_view line, HttpRequest& out, std::string& why) {
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    why = "the request line is not METHOD TARGET HTTP/1.1";
    return false;
  }
  out.method = std::string(line.substr(0, sp1));
  out.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  out.version = std::string(line.substr(sp2 + 1));
  if (out.method.empty() || !std::all_of(out.method.begin(), out.method.end(), is_token_char)) {
    why = "a malformed method";
    return false;
  }
  if (out.version != "HTTP/1.1" && out.version != "HTTP/1.0") {
    why = "only HTTP/1.0 and HTTP/1.1 are spoken here";
    return false;
  }
  if (out.target.empty() || out.target.front() != '/' ||
      std::any_of(out.target.begin(), out.target.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
    why = "the target must be a path starting with '/'";
    return false;
  }
  const auto q = out.target.find('?');
  out.path = percent_decode(std::string_view(out.target).substr(0, q), false);
  if (out.path.find('\0') != std::string::npos) {
    why = "a NUL in the path";
    return false;
  }
  if (q != std::string::npos) out.params = parse_query(std::string_view(out.target).substr(q + 1));
  return true;
}

bool parse_header_line(std::string_view line, HttpRequest& out, std::string& why) {
  if (line.front() == ' ' || line.front() == '\t') {
    why = "folded header lines are not accepted";
    return false;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 ||
      !std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(colon), is_token_char)) {
    why = "a malformed header line";
    return false;
  }
  const std::string name = lower(std::string(line.substr(0, colon)));
  const std::string value(trim(line.substr(colon + 1)));
  if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return c < 0x20 && c != '\t'; })) {
    why = "a control character in header " + name;
    return false;
  }
  auto [it, fresh] = out.headers.emplace(name, value);
  if (!fresh) {
    if (name == "host" || name == "content-length") {
      why = "header " + name + " given twice";
      return false;
    }
    it->second += ", " + value;
  }
  if (out.headers.size() > kMaxHeaders) {
    why = "more than " + std::to_string(kMaxHeaders) + " headers";
    return false;
  }
  return true;
}

}  // namespace

std::string error_body(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += plus_is_space && c == '+' ? ' ' : c;
    }
  }
  return out;
}

ParseStatus parse_request(std::string_view buffer, HttpRequest& out, std::size_t& consumed, std::string& why) {
  std::size_t start = 0;
  while (start < buffer.size() && (buffer[start] == '\r' || buffer[start] == '\n')) ++start;  // RFC 9112 2.2
  const std::size_t crlf = buffer.find("\r\n\r\n", start), lf = buffer.find("\n\n", start);
  const std::size_t end = std::min(crlf, lf);
  if (end == std::string_view::npos) return ParseStatus::kIncomplete;
  consumed = end + (end == crlf ? 4 : 2);
  out = HttpRequest();
  std::string_view head = buffer.substr(start, end - start);
  bool first = true;
  while (!head.empty()) {
    const auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      why = "an empty line inside the head";
      return ParseStatus::kBad;
    }
    if (!(first ? parse_request_line(line, out, why) : parse_header_line(line, out, why))) return ParseStatus::kBad;
    first = false;
  }
  if (first) {
    why = "no request line";
    return ParseStatus::kBad;
  }
  return ParseStatus::kComplete;
}

std::string serialize(const HttpResponse& response, bool keep_alive, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + reason(response.status) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += "X-Content-Type-Options: nosniff\r\n";
  out += std::string("Connection: ") + (keep_alive ? "keep-alive" : "close") + "\r\n";
  for (const auto& [name, value] : response.headers) out.append(name).append(": ").append(value).append("\r\n");
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

// ---- the server ------------------------------------------------------------------------------

struct HttpServer::Impl {
  enum class Phase { kReading, kWorking, kWriting };
  struct Connection {
    int fd = -1;
    std::string peer;
    std::string in, out;
    std::size_t sent = 0;
    Phase phase = Phase::kReading;
    bool started = false;  // a request's first bytes have come
    bool close_after = false;
    bool peer_closed = false;  // the client sent its last byte
    Clock::time_point opened, deadline;
  };
  struct Job {
    uint64_t id;
    HttpRequest request;
    bool keep_alive, head_only;
  };
  struct Done {
    uint64_t id;
    std::string bytes;
    bool close_after;
  };

  HttpServerOptions options;
  Handler handler;
  int listen_fd = -1, wake_read = -1, wake_write = -1, port = 0;
  std::map<uint64_t, Connection> connections;  // the loop thread's alone
  uint64_t next_id = 1;
  std::mutex mutex;
  std::condition_variable work_ready;
  std::deque<Job> jobs;
  std::deque<Done> done;
  bool stopping = false;
  Clock::time_point accept_paused_until{};
  std::thread loop;
  std::vector<std::thread> workers;

  Impl(HttpServerOptions o, Handler h) : options(std::move(o)), handler(std::move(h)) {}
  void bind_and_listen();
  void run_loop();
  void run_worker();
  void accept_all(Clock::time_point now);
  void make_room_for(const std::string& peer);
  void on_readable(uint64_t id, Connection& c, Clock::time_point now);
  void try_parse(uint64_t id, Connection& c, Clock::time_point now);
  void on_writable(Connection& c, Clock::time_point now);
  void answer_now(Connection& c, int status, const std::string& message, Clock::time_point now);
  void take_done(Clock::time_point now);
  void wake() {
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(wake_write, &b, 1);
  }
};

void HttpServer::Impl::bind_and_listen() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = options.host() + ":" + std::to_string(options.port());
  if (const int rc = ::getaddrinfo(options.host().c_str(), std::to_string(options.port()).c_str(), &hints, &found);
      rc != 0) {
    throw std::runtime_error("cannot listen on " + where + ": " + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: with SO_REUSEPORT a second dashboard on the same port would share it
    // silently instead of being told the port is taken.
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd < 0) throw std::runtime_error("cannot listen on " + where + " (" + why + ")");
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &length);
  port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

namespace {

std::string peer_address(const sockaddr_storage& peer) {
  char text[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_addr, text, sizeof text);
  } else {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&peer)->sin_addr, text, sizeof text);
  }
  return text;
}

}  // namespace

// A client at its cap of connections gives up the one that has waited longest on a request head it
// has not finished, else its longest idle one; one with an answer pending is never taken.
void HttpServer::Impl::make_room_for(const std::string& peer) {
  int count = 0;
  auto victim = connections.end();
  for (auto it = connections.begin(); it != connections.end(); ++it) {
    if (it->second.peer != peer) continue;
    ++count;
    const Connection& c = it->second;
    if (c.phase != Phase::kReading) continue;
    if (victim == connections.end() || (c.started && !victim->second.started) ||
        (c.started == victim->second.started && c.opened < victim->second.opened)) {
      victim = it;
    }
  }
  if (count < options.max_connections_per_client() || victim == connections.end()) return;
  ::close(victim->second.fd);
  connections.erase(victim);
}

void HttpServer::Impl::accept_all(Clock::time_point now) {
  while (static_cast<int>(connections.size()) < options.max_connections()) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {  // EAGAIN, the client gave up already, or no descriptor left: wait a little then
      if (errno == EMFILE || errno == ENFILE) accept_paused_until = now + std::chrono::milliseconds(100);
      return;
    }
    Connection c;
    c.fd = fd;
    c.peer = peer_address(peer);
    make_room_for(c.peer);
    const auto same =
        std::count_if(connections.begin(), connections.end(), [&](const auto& kv) { return kv.second.peer == c.peer; });
    c.opened = now;
    c.deadline =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.header_timeout_s()));
    const uint64_t id = next_id++;
    auto& placed = connections.emplace(id, std::move(c)).first->second;
    if (same >= options.max_connections_per_client()) {
      answer_now(placed, 503, "too many connections from " + placed.peer, now);
    }
  }
}

void HttpServer::Impl::answer_now(Connection& c, int status, const std::string& message, Clock::time_point now) {
  HttpResponse r{.status = status, .content_type = "application/json; charset=utf-8"};
  r.body = error_body(message);
  c.out = serialize(r, false, false);
  c.sent = 0;
  c.close_after = true;
  c.phase = Phase::kWriting;
  c.deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(5.0));
}

void HttpServer::Impl::on_readable(uint64_t id, Connection& c, Clock::time_point now) {
  char buffer[16384];
  while (true) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      c.in.append(buffer, static_cast<std::size_t>(n));
      if (c.in.size() > 4 * options.max_header_bytes()) break;  // enough to judge
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    c.peer_closed = true;  // closed by the client (perhaps after a whole request: answered first), or an error
    break;
  }
  if (!c.started && !c.in.empty()) {
    c.started = true;
    c.deadline =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.header_timeout_s()));
  }
  try_parse(id, c, now);
  if (c.peer_closed && c.phase == Phase::kReading) {  // nothing more will come: close
    c.close_after = true;
    c.phase = Phase::kWriting;
    c.out.clear();
  }
}

void HttpServer::Impl::try_parse(uint64_t id, Connection& c, Clock::time_point now) {
  HttpRequest request;
  std::size_t consumed = 0;
  std::string why;
  const ParseStatus status = parse_request(c.in, request, consumed, why);
  if (status == ParseStatus::kIncomplete) {
    if (c.in.size() > options.max_header_bytes()) answer_now(c, 431, "the request's head is too large", now);
    return;
  }
  if (status == ParseStatus::kBad) return answer_now(c, 400, why, now);
  if (consumed > options.max_header_bytes()) return answer_now(c, 431, "the request's head is too large", now);
  c.in.erase(0, consumed);
  if (request.method != "GET" && request.method != "HEAD") {
    return answer_now(c, 405, "this dashboard only reads: GET and HEAD", now);
  }
  const std::string length = request.header("content-length");
  if ((!length.empty() && length != "0") || !request.header("transfer-encoding").empty()) {
    return answer_now(c, 413, "a GET carries no body here", now);
  }
  const std::string connection = lower(request.header("connection"));
  const bool keep_alive =
      !c.peer_closed && (request.version == "HTTP/1.1" ? connection.find("close") == std::string::npos
                                                       : connection.find("keep-alive") != std::string::npos);
  request.peer = c.peer;
  c.phase = Phase::kWorking;
  const bool head_only = request.method == "HEAD";
  {
    std::lock_guard lock(mutex);
    jobs.push_back({id, std::move(request), keep_alive, head_only});
  }
  work_ready.notify_one();
}

void HttpServer::Impl::on_writable(Connection& c, Clock::time_point now) {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    c.close_after = true;
    c.out.clear();
    c.sent = 0;
    break;
  }
  if (c.close_after) {
    ::shutdown(c.fd, SHUT_WR);
    c.deadline = now;  // closed by the sweep below
    c.phase = Phase::kWriting;
    c.out.clear();
    c.sent = 0;
    return;
  }
  c.out.clear();
  c.sent = 0;
  c.phase = Phase::kReading;
  c.started = !c.in.empty();
  c.deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                         c.started ? options.header_timeout_s() : options.idle_timeout_s()));
}

void HttpServer::Impl::take_done(Clock::time_point now) {
  std::deque<Done> finished;
  {
    std::lock_guard lock(mutex);
    finished.swap(done);
  }
  for (auto& d : finished) {
    auto it = connections.find(d.id);
    if (it == connections.end()) continue;
    Connection& c = it->second;
    c.out = std::move(d.bytes);
    c.sent = 0;
    c.close_after = d.close_after;
    c.phase = Phase::kWriting;
    c.deadline =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.write_timeout_s()));
    on_writable(c, now);
    if (c.phase == Phase::kReading && !c.in.empty()) try_parse(d.id, c, now);  // a pipelined request
  }
}

void HttpServer::Impl::run_loop() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  while (true) {
    {
      std::lock_guard lock(mutex);
      if (stopping) break;
    }
    auto now = Clock::now();
    fds.clear();
    ids.clear();
    fds.push_back({wake_read, POLLIN, 0});
    const bool room = static_cast<int>(connections.size()) < options.max_connections() && now >= accept_paused_until;
    fds.push_back({room ? listen_fd : -1, POLLIN, 0});
    auto nearest = now + std::chrono::seconds(1);
    if (now < accept_paused_until) nearest = std::min(nearest, accept_paused_until);
    for (auto& [id, c] : connections) {
      if (c.phase == Phase::kWorking) continue;
      const bool closing = c.phase == Phase::kWriting && c.out.empty();
      fds.push_back({c.fd, static_cast<short>(closing ? 0 : c.phase == Phase::kReading ? POLLIN : POLLOUT), 0});
      ids.push_back(id);
      nearest = std::min(nearest, c.deadline);
    }
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(nearest - now).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait_ms + 1, 0, 1000)));
    now = Clock::now();
    if (fds[0].revents & POLLIN) {
      char drain[256];
      while (::read(wake_read, drain, sizeof drain) > 0) {
      }
      take_done(now);
    }
    if (fds[1].revents & POLLIN) accept_all(now);
    for (std::size_t i = 2; i < fds.size(); ++i) {
      auto it = connections.find(ids[i - 2]);
      if (it == connections.end() || fds[i].revents == 0) continue;
      Connection& c = it->second;
      if (c.phase == Phase::kReading && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        on_readable(it->first, c, now);
      else if (c.phase == Phase::kWriting && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP)))
        on_writable(c, now);
    }
    // Closed: connections past their deadline (a head too slow, an answer not taken, an idle
    // keep-alive) and those that asked to be.
    for (auto it = connections.begin(); it != connections.end();) {
      Connection& c = it->second;
      const bool finished = c.phase == Phase::kWriting && c.out.empty() && c.close_after;
      if (c.phase != Phase::kWorking && (finished || c.deadline <= now)) {
        ::close(c.fd);
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void HttpServer::Impl::run_worker() {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mutex);
      work_ready.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (stopping) return;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    HttpResponse response;
    try {
      response = handler(job.request);
    } catch (const std::exception& e) {
      response =
          HttpResponse{.status = 500, .content_type = "application/json; charset=utf-8", .body = error_body(e.what())};
    }
    std::string bytes = serialize(response, job.keep_alive, job.head_only);
    {
      std::lock_guard lock(mutex);
      done.push_back({job.id, std::move(bytes), !job.keep_alive});
    }
    wake();
  }
}

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {
  auto& i = *impl_;
  // Never more connections than descriptors: accept() failing with EMFILE would wake poll() forever.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const auto room = static_cast<int>(std::max<rlim_t>(files.rlim_cur, 96) - 64);
    i.options.max_connections(std::min(i.options.max_connections(), room));
  }
  i.bind_and_listen();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    ::close(i.listen_fd);
    throw std::runtime_error(std::string("cannot make the server's wake-up pipe: ") + std::strerror(errno));
  }
  i.wake_read = pipe_fds[0];
  i.wake_write = pipe_fds[1];
  i.loop = std::thread([&i] { i.run_loop(); });
  for (int w = 0; w < std::max(1, i.options.workers()); ++w) i.workers.emplace_back([&i] { i.run_worker(); });
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  auto& i = *impl_;
  {
    std::lock_guard lock(i.mutex);
    if (i.stopping) return;
    i.stopping = true;
  }
  i.work_ready.notify_all();
  i.wake();
  if (i.loop.joinable()) i.loop.join();
  for (auto& w : i.workers) {
    if (w.joinable()) w.join();
  }
  for (auto& [_, c] : i.connections) ::close(c.fd);
  i.connections.clear();
  ::close(i.listen_fd);
  ::close(i.wake_read);
  ::close(i.wake_write);
}

}  // namespace baton::dashboard
