// A raw HTTP client for the dashboard's tests: bytes exactly as written (any Host header, a head
// sent a byte at a time), the answer read until the server closes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace baton::dashboard {

using Clock = std::chrono::steady_clock;

inline int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline void send_all(int fd, const std::string& bytes) {
  [[maybe_unused]] const auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

// What the server sends until it closes or `timeout_s` passes.
inline std::string read_until_closed(int fd, double timeout_s) {
  std::string out;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  char buffer[4096];
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// One request on a fresh connection; the whole answer (Connection: close asked).
inline std::string ask(int port, const std::string& head, double timeout_s = 5) {
  const int fd = connect_to(port);
  if (fd < 0) return "no connection";
  send_all(fd, head);
  std::string out = read_until_closed(fd, timeout_s);
  ::close(fd);
  return out;
}

// The body of an answer (after the blank line).
inline std::string body_of(const std::string& answer) {
  const auto at = answer.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : answer.substr(at + 4);
}

}  // namespace baton::dashboard
