// The dashboard: its answers (Api: the page, Chart.js from Debian's package, /api/) behind the
// HTTP server of http.cpp, and the thread that reads the runs again as they change.
#include <ifaddrs.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <sstream>
#include <thread>

#include "api.h"
#include "baton/core/options.h"
#include "baton/dashboard/dashboard.h"
#include "baton/io/file.h"

namespace baton {
namespace dashboard {
const std::map<std::string, std::string>& page_files();  // generated from src/dashboard/page/

namespace {

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }
bool wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split_on(const std::string& s, char by) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, by);) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Names and addresses of this machine, for a dashboard listening on every interface.
std::vector<std::string> machine_names() {
  std::vector<std::string> out;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') out.push_back(name);
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6)) continue;
      char text[NI_MAXHOST] = {};
      const socklen_t length =
          a->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
      if (::getnameinfo(a->ifa_addr, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
        std::string address = text;
        if (const auto scope = address.find('%'); scope != std::string::npos) address.resize(scope);
        out.push_back(address);
      }
    }
    ::freeifaddrs(list);
  }
  return out;
}

// With "; charset=utf-8" a browser reads JSON and scripts as UTF-8 whatever its settings.
constexpr const char* kJson = "application/json; charset=utf-8";
constexpr const char* kScript = "application/javascript; charset=utf-8";

std::string content_type(const std::string& name) {
  if (name.ends_with(".js")) return kScript;
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  return "text/html; charset=utf-8";
}

HttpResponse json_response(const nlohmann::json& body) {
  if (body.is_null()) return {.status = 404, .content_type = kJson, .body = error_body("no such run or search")};
  return {.status = 200,
          .content_type = kJson,
          .body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          .headers = {{"Cache-Control", "no-store"}}};
}

HttpResponse error_response(int status, const std::string& message) {
  return {.status = status, .content_type = kJson, .body = error_body(message)};
}

bool page_name(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  const std::string ext = name.substr(dot + 1);
  return (ext == "js" || ext == "css") && std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(dot),
                                                      [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}

bool run_or_search_id(const std::string& id) {
  return !id.empty() && id.size() <= 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

}  // namespace

Api::Api(const DashboardOptions& options, const Catalog& catalog) : options_(options), catalog_(catalog) {
  hosts_ = {"localhost", "127.0.0.1", "::1"};
  if (!wildcard(options.host())) hosts_.insert(lower_case(options.host()));
  if (wildcard(options.host())) {
    for (const auto& name : machine_names()) hosts_.insert(lower_case(name));
  }
  for (const auto& name : options.allowed_hosts()) hosts_.insert(lower_case(name));
}

// "Host: name:port", "[::1]:8080", "name": the name, lower case, compared with those served.
bool Api::host_allowed(const std::string& header) const {
  std::string host = lower_case(header);
  if (host.empty()) return false;
  if (host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else if (const auto colon = host.find(':'); colon != std::string::npos) {
    host.resize(colon);
  }
  if (!host.empty() && host.back() == '.') host.pop_back();  // "localhost." is localhost
  return hosts_.count(host) > 0;
}

bool Api::authorized(const HttpRequest& request) const {
  if (options_.token().empty()) return true;
  return request.param("token") == options_.token() || request.header("authorization") == "Bearer " + options_.token();
}

HttpResponse Api::handle(const HttpRequest& request) const {
  if (!host_allowed(request.header("host"))) {
    return error_response(403, "this dashboard answers to the host names " +
                                   join_names({hosts_.begin(), hosts_.end()}) + " (not '" + request.header("host") +
                                   "'); baton dashboard --allow-host NAME adds one");
  }
  if (request.path.rfind("/api/", 0) == 0 && !authorized(request)) {
    return error_response(401, "this dashboard needs its token: ?token=TOKEN");
  }
  return route(request);
}

HttpResponse Api::route(const HttpRequest& request) const {
  const std::string& path = request.path;
  if (path == "/") return {.content_type = content_type("index.html"), .body = page_files().at("index.html")};
  if (path.rfind("/page/", 0) == 0) {
    const std::string name = path.substr(6);
    auto it = page_files().find(name);
    if (!page_name(name) || it == page_files().end()) return error_response(404, "no such file");
    return {.content_type = content_type(name), .body = it->second};
  }
  if (path == "/vendor/chart.js") {
    try {
      return {.content_type = kScript,
              .body = read_file(options_.chart_js(), {.what = "Chart.js", .max_bytes = 8u << 20}),
              .headers = {{"Cache-Control", "max-age=3600"}}};
    } catch (const FileError&) {
      return {
          .content_type = kScript,
          .body = "console.warn('baton dashboard: Chart.js is missing (Debian package libjs-chart.js): no charts');"};
    }
  }
  if (path.rfind("/api/", 0) == 0) return api(request);
  return error_response(404, "no such page");
}

// /api/runs, /api/runs/ID, /api/runs/ID/series, /api/runs/ID/traces/NAME, /api/searches,
// /api/searches/ID (docs/dashboard.md).
HttpResponse Api::api(const HttpRequest& request) const {
  const std::vector<std::string> parts = split_on(request.path.substr(5), '/');
  if (parts.empty()) return error_response(404, "no such API");
  if (parts[0] == "runs") {
    if (parts.size() == 1) {
      return json_response(
          {{"runs", catalog_.runs()}, {"searches", catalog_.searches()}, {"problems", catalog_.problems()}});
    }
    if (!run_or_search_id(parts[1])) return error_response(404, "no such run or search");
    if (parts.size() == 2) return json_response(catalog_.run(parts[1]));
    if (parts.size() == 3 && parts[2] == "series") {
      const std::string x = request.params.count("x") ? request.param("x") : "step";
      std::size_t points = 1000;
      try {
        if (request.params.count("points"))
          points = std::clamp<std::size_t>(std::stoul(request.param("points")), 3, 100000);
      } catch (const std::exception&) {
      }
      return json_response(catalog_.series(parts[1], split_on(request.param("keys"), ','), x, points));
    }
    if (parts.size() == 4 && parts[2] == "traces") return trace(parts[1], parts[3]);
    return error_response(404, "no such API");
  }
  if (parts[0] == "searches") {
    if (parts.size() == 1) return json_response(catalog_.searches());
    if (parts.size() == 2 && run_or_search_id(parts[1])) return json_response(catalog_.search(parts[1]));
  }
  return error_response(404, "no such API");
}

HttpResponse Api::trace(const std::string& run, const std::string& name) const {
  const std::optional<std::string> text = catalog_.read_trace(run, name);
  if (!text) return error_response(404, "no such trace: the run's traces/ lists its .json files");
  return {.content_type = kJson, .body = *text};
}

}  // namespace dashboard

struct Dashboard::Impl {
  DashboardOptions options;
  dashboard::Catalog catalog;
  dashboard::Api api;
  std::unique_ptr<dashboard::HttpServer> server;
  std::thread refresher;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;

  explicit Impl(DashboardOptions o) : options(std::move(o)), catalog(options.paths()), api(options, catalog) {}
  void refresh_loop();
};

// Reads everything once at the start (the server already answers: its first answers wait for
// this), then what changed every refresh_s.
void Dashboard::Impl::refresh_loop() {
  catalog.refresh();
  std::unique_lock lock(mutex);
  while (!stopping) {
    wake.wait_for(lock, std::chrono::duration<double>(options.refresh_s()));
    if (stopping) break;
    lock.unlock();
    catalog.refresh();
    lock.lock();
  }
}

Dashboard::Dashboard(DashboardOptions options) {
  if (options.port() < 0 || options.port() > 65535) {
    throw DashboardError("--port " + std::to_string(options.port()) +
                         ": a port is a number from 1 to 65535 (0: any free one)");
  }
  if (!dashboard::loopback(options.host()) && options.token().empty()) {
    throw DashboardError("--host " + options.host() +
                         " lets other machines read your runs: give --token TOKEN too (or keep 127.0.0.1)");
  }
  try {
    impl_ = std::make_unique<Impl>(std::move(options));
  } catch (const std::invalid_argument& e) {
    throw DashboardError(e.what());
  }
  auto& i = *impl_;
  try {
    i.server = std::make_unique<dashboard::HttpServer>(
        dashboard::HttpServerOptions().host(i.options.host()).port(i.options.port()),
        [&i](const dashboard::HttpRequest& r) { return i.api.handle(r); });
  } catch (const std::runtime_error& e) {
    throw DashboardError(std::string(e.what()) + "; in use? try --port with another number, or 0 for any free one");
  }
  i.refresher = std::thread([&i] { i.refresh_loop(); });
}

Dashboard::~Dashboard() { stop(); }

int Dashboard::port() const { return impl_->server->port(); }

std::string Dashboard::url() const {
  const std::string& host = impl_->options.host();
  const std::string shown = dashboard::wildcard(host)             ? "127.0.0.1"
                            : host.find(':') != std::string::npos ? "[" + host + "]"
                                                                  : host;
  return "http://" + shown + ":" + std::to_string(port()) + "/" +
         (impl_->options.token().empty() ? "" : "?token=" + impl_->options.token());
}

std::vector<std::string> Dashboard::problems() const { return impl_->catalog.problems(); }

void Dashboard::wait() {
  std::unique_lock lock(impl_->mutex);
  impl_->wake.wait(lock, [this] { return impl_->stopping; });
}

void Dashboard::stop() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->server) impl_->server->stop();
  if (impl_->refresher.joinable()) impl_->refresher.join();
}

}  // namespace baton
