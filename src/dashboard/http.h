// The dashboard's HTTP/1.1 server: GET and HEAD only, keep-alive, one thread that reads and writes
// every connection without blocking (a slow client holds a socket, never a thread) and a few
// threads that compute answers. Bounded: the time to send a request's head, its size, connections
// per client address and in all. Private to src/dashboard.
//
//   HttpServer server(HttpServerOptions().host("127.0.0.1").port(0),
//                     [](const HttpRequest& r) { return HttpResponse{.body = "hello"}; });
//   server.port();  // the port it listens on; answers until stop() or destruction
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baton/core/options.h"

namespace baton::dashboard {

struct HttpRequest {
  std::string method, target, path, version;   // path: the target before '?', %-decoded
  std::map<std::string, std::string> headers;  // names in lower case
  std::map<std::string, std::string> params;   // the query string, decoded
  std::string peer;                            // the client's address
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body{};
  std::vector<std::pair<std::string, std::string>> headers{};
};

enum class ParseStatus { kIncomplete, kComplete, kBad };

// Parses one request head at the start of `buffer`. kComplete: `out` holds it and `consumed` the
// bytes it took (the blank line included); kBad: `why` says what (a 400's words).
ParseStatus parse_request(std::string_view buffer, HttpRequest& out, std::size_t& consumed, std::string& why);

// "%41b+c" -> "Ab c" (with plus_is_space); a malformed escape is kept as it is.
std::string percent_decode(std::string_view text, bool plus_is_space);

// {"error": MESSAGE} as JSON text (escaped; bytes that are not UTF-8 replaced).
std::string error_body(const std::string& message);

// The bytes of a response; HEAD sends the head alone.
std::string serialize(const HttpResponse& response, bool keep_alive, bool head_only);

class HttpServerOptions {
  BATON_ARG(std::string, host) = "127.0.0.1";
  BATON_ARG(int, port) = 8080;                       // 0: any free port
  BATON_ARG(int, workers) = 4;                       // threads that compute answers
  BATON_ARG(double, header_timeout_s) = 10;          // a request's head must arrive within this
  BATON_ARG(double, idle_timeout_s) = 30;            // a kept-alive connection with no request is closed
  BATON_ARG(double, write_timeout_s) = 60;           // an answer not taken by then is dropped
  BATON_ARG(std::size_t, max_header_bytes) = 16384;  // a larger head gets 431
  BATON_ARG(int, max_connections_per_client) = 32;   // from one address; more are answered 503
  BATON_ARG(int, max_connections) = 1000;            // in all
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Binds (throws std::runtime_error naming the address and why) and starts serving.
  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;
  void stop();  // closes every connection; idempotent

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::dashboard
