// The dashboard's HTTP server on a loopback port: request heads parsed strictly, GET and HEAD only,
// keep-alive and pipelining, and the bounds that keep one client from starving the others (a head
// that takes too long, one too large, too many connections from one address).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "dashboard/http.h"
#include "dashboard/raw_http.h"

namespace baton::dashboard {
namespace {

HttpServer echo_server(HttpServerOptions options = HttpServerOptions()) {
  return HttpServer(options.host("127.0.0.1").port(0), [](const HttpRequest& r) {
    return HttpResponse{.body = r.method + " " + r.path + " q=" + r.param("q") + " host=" + r.header("host")};
  });
}

TEST(HttpParse, ARequestHeadIsParsedAndDecoded) {
  HttpRequest r;
  std::size_t consumed = 0;
  std::string why;
  const std::string text = "GET /a%20b?q=x+y&z=%41 HTTP/1.1\r\nHost: LocalHost:80\r\nX-A: 1\r\nx-a: 2\r\n\r\nNEXT";
  ASSERT_EQ(parse_request(text, r, consumed, why), ParseStatus::kComplete) << why;
  EXPECT_EQ(consumed, text.size() - 4);
  EXPECT_EQ(r.path, "/a b");
  EXPECT_EQ(r.param("q"), "x y");
  EXPECT_EQ(r.param("z"), "A");
  EXPECT_EQ(r.header("host"), "LocalHost:80");
  EXPECT_EQ(r.header("x-a"), "1, 2");
  EXPECT_EQ(parse_request("GET / HTTP/1.1\r\nHost: x\r\n", r, consumed, why), ParseStatus::kIncomplete);
}

TEST(HttpParse, MalformedHeadsAreRefused) {
  for (const std::string bad :
       {"GET /\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET http://x/ HTTP/1.1\r\n\r\n",
        "G@T / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "GET / HTTP/1.1\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\nNo-Colon\r\n\r\n", "GET /%00 HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n"}) {
    HttpRequest r;
    std::size_t consumed = 0;
    std::string why;
    EXPECT_EQ(parse_request(bad, r, consumed, why), ParseStatus::kBad) << bad;
    EXPECT_FALSE(why.empty());
  }
}

TEST(HttpServer, AnswersGetAndHeadAndRefusesTheRest) {
  auto server = echo_server();
  const int port = server.port();
  const std::string get = ask(port, "GET /x?q=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(get.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_NE(get.find("\r\n\r\nGET /x q=1 host=h"), std::string::npos) << get;
  const std::string head = ask(port, "HEAD /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_NE(head.find("Content-Length: "), std::string::npos);
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");  // the head alone
  EXPECT_EQ(ask(port, "POST /x HTTP/1.1\r\nHost: h\r\n\r\n").substr(0, 12), "HTTP/1.1 405");
  {  // a client that half-closes after its request (nc, some scripts) still gets its answer
    const int fd = connect_to(port);
    send_all(fd, "GET /half HTTP/1.1\r\nHost: h\r\n\r\n");
    ::shutdown(fd, SHUT_WR);
    EXPECT_NE(read_until_closed(fd, 5).find("GET /half q= host=h"), std::string::npos);
    ::close(fd);
  }
  EXPECT_EQ(ask(port, "GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello").substr(0, 12), "HTTP/1.1 413");
  EXPECT_EQ(ask(port, "BLAH\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(ask(port, "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 431");
}

TEST(HttpServer, KeepsAliveAndAnswersPipelinedRequestsInOrder) {
  auto server = echo_server();
  const int fd = connect_to(server.port());
  send_all(fd,
           "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTTP/1.1\r\nHost: "
           "h\r\nConnection: close\r\n\r\n");
  const std::string all = read_until_closed(fd, 5);
  ::close(fd);
  const auto one = all.find("GET /1 "), two = all.find("GET /2 "), three = all.find("GET /3 ");
  ASSERT_NE(three, std::string::npos) << all;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
}

// Slow-loris: many clients sending a head a byte at a time hold sockets, never the server's
// threads: everyone else is answered at once, and the slow ones are cut off at the head timeout.
TEST(HttpServer, SlowClientsDoNotStarveTheOthersAndAreCutOff) {
  auto server = echo_server(HttpServerOptions().header_timeout_s(1.5).max_connections_per_client(64));
  const int port = server.port();
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) {
    const int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    send_all(fd, "G");
    slow.push_back(fd);
  }
  for (int round = 0; round < 3; ++round) {
    for (int fd : slow) send_all(fd, "E");
    const auto start = Clock::now();
    EXPECT_EQ(ask(port, "GET /ok HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").substr(0, 15), "HTTP/1.1 200 OK");
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500)) << "round " << round;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int closed = 0;
  for (int fd : slow) {
    char c;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) > 0 && ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0) ++closed;
    ::close(fd);
  }
  EXPECT_EQ(closed, 40);  // past the head timeout, every slow connection is closed by the server
}

// One address at its cap: its oldest unfinished head makes room for the new connection.
TEST(HttpServer, OneAddressAtItsCapMakesRoomByDroppingItsOldestUnfinishedRequest) {
  auto server = echo_server(HttpServerOptions().max_connections_per_client(8).header_timeout_s(30));
  std::vector<int> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(connect_to(server.port()));
    send_all(slow.back(), "GET /slow");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(ask(server.port(), "GET /ok HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").substr(0, 15),
            "HTTP/1.1 200 OK");
  for (int fd : slow) ::close(fd);
}

}  // namespace
}  // namespace baton::dashboard
