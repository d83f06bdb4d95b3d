// A local HTTP server whose every answer a test writes by hand, for clients that must survive a
// hostile or broken server: one that stalls mid-body, trickles a byte a second, lies in its headers,
// or answers with escape sequences. Each connection runs the test's handler on a thread of its own.
//
//   ScriptedServer server([](const ScriptedServer::Request& r, ScriptedServer::Reply& out) {
//     out.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(10, 'x'));
//     out.stall(60);  // then nothing: the client's deadline must end it
//   });
//   read_range(server.url("/x.tar"), 0, 1000, {.retry_seconds = 2});
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace baton::testing {

class ScriptedServer {
 public:
  struct Request {
    std::string method;
    std::string target;  // "/api/2.0/mlflow/runs/create"
    std::string head;    // every header line, as sent
    std::string body;
  };
  // What the handler writes on its connection; every wait ends early once the server stops.
  class Reply {
   public:
    Reply(int fd, const std::atomic<bool>& stopping) : fd_(fd), stopping_(stopping) {}
    bool send(const std::string& bytes) {
      return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
    }
    // A whole answer: status line, Content-Length, the extra header lines given, the body.
    bool answer(int status, const std::string& body, const std::string& headers = "") {
      return send("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n" + headers + "\r\n" + body);
    }
    // Sends nothing for `seconds` (or until the server stops or the client goes).
    void stall(double seconds) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (std::chrono::steady_clock::now() < end && !stopping_.load() && !client_gone()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    // One byte of `bytes` every `every` seconds until all went or the client left.
    void trickle(const std::string& bytes, double every) {
      for (char c : bytes) {
        if (stopping_.load() || !send(std::string(1, c))) return;
        stall(every);
      }
    }
    bool client_gone() const {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return false;
      char c;
      return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0 || (p.revents & (POLLHUP | POLLERR)) != 0;
    }

   private:
    int fd_;
    const std::atomic<bool>& stopping_;
  };
  using Handler = std::function<void(const Request&, Reply&)>;

  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("ScriptedServer: cannot listen on a loopback port");
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    acceptor_.join();
    ::close(listener_);
    std::lock_guard lock(mutex_);
    for (auto& t : connections_) t.join();
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  // Every request received so far, in order.
  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void accept_loop() {
    while (!stopping_.load()) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Reads one request (head, then a body of Content-Length bytes), runs the handler, closes.
  void serve(int fd) {
    std::string data;
    char buffer[65536];
    size_t end = std::string::npos;
    while (!stopping_.load() && (end = data.find("\r\n\r\n")) == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      data.append(buffer, static_cast<size_t>(n));
    }
    if (end == std::string::npos) return (void)::close(fd);
    Request request;
    request.head = data.substr(0, end);
    request.method = request.head.substr(0, request.head.find(' '));
    const size_t target = request.method.size() + 1;
    request.target = request.head.substr(target, request.head.find(' ', target) - target);
    size_t length = 0;
    if (const size_t at = lowered(request.head).find("content-length:"); at != std::string::npos) {
      length = std::stoul(request.head.substr(at + 15));
    }
    request.body = data.substr(end + 4);
    while (!stopping_.load() && request.body.size() < length) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      request.body.append(buffer, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    Reply reply(fd, stopping_);
    handler_(request, reply);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  static std::string lowered(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  Handler handler_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<std::thread> connections_;
  std::vector<Request> requests_;
};

}  // namespace baton::testing
