// The dashboard's HTTP server (cpp-httplib): the page, Chart.js from Debian's package, /api/.
#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <thread>

#include "baton/dashboard/dashboard.h"
#include "sources.h"

#ifdef BATON_HAVE_HTTPLIB
#include <httplib.h>
#endif

namespace baton {
namespace dashboard {
const std::map<std::string, std::string>& page_files();  // generated from src/dashboard/page/
}  // namespace dashboard

#ifdef BATON_HAVE_HTTPLIB
namespace {

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, by);) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// With "; charset=utf-8" httplib does not compress JSON and scripts: its brotli at quality 11
// took 14 s for a search of 10,000 trials (4.7 MB), far longer than sending it, even across a
// network. (text/* it still compresses: the page's small files.)
constexpr const char* kJson = "application/json; charset=utf-8";
constexpr const char* kScript = "application/javascript; charset=utf-8";

std::string content_type(const std::string& name) {
  if (name.ends_with(".js")) return kScript;
  if (name.ends_with(".css")) return "text/css";
  return "text/html; charset=utf-8";
}

void send_json(httplib::Response& res, const nlohmann::json& body) {
  if (body.is_null()) {
    res.status = 404;
    res.set_content(R"({"error": "no such run or search"})", kJson);
    return;
  }
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kJson);
}

}  // namespace

struct Dashboard::Impl {
  DashboardOptions options;
  dashboard::Catalog catalog;
  httplib::Server server;
  int port = 0;
  std::thread listener, refresher;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;

  explicit Impl(DashboardOptions o) : options(std::move(o)), catalog(options.paths()) {}

  bool authorized(const httplib::Request& req) const {
    if (options.token().empty()) return true;
    return req.get_param_value("token") == options.token() ||
           req.get_header_value("Authorization") == "Bearer " + options.token();
  }
  void routes();
  void refresh_loop();
};

// Long by nature: the table of the dashboard's routes (socket options, token check, then one
// short handler per path), read top to bottom like the API list in docs/dashboard.md.
void Dashboard::Impl::routes() {
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second dashboard on the
  // same port would share it silently instead of being told the port is taken.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
  });
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.path.rfind("/api/", 0) != 0 || authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_content(R"({"error": "this dashboard needs its token: ?token=TOKEN"})", kJson);
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(dashboard::page_files().at("index.html"), "text/html; charset=utf-8");
  });
  server.Get(R"(/page/([a-z_]+\.(js|css)))", [](const httplib::Request& req, httplib::Response& res) {
    auto it = dashboard::page_files().find(req.matches[1]);
    if (it == dashboard::page_files().end()) return void(res.status = 404);
    res.set_content(it->second, content_type(it->first));
  });
  server.Get("/vendor/chart.js", [this](const httplib::Request&, httplib::Response& res) {
    std::ifstream in(options.chart_js(), std::ios::binary);
    if (!in) {
      res.set_content("console.warn('baton dashboard: " + options.chart_js() +
                          " is missing (Debian package libjs-chart.js): no charts');",
                      kScript);
      return;
    }
    std::stringstream s;
    s << in.rdbuf();
    res.set_header("Cache-Control", "max-age=3600");
    res.set_content(s.str(), kScript);
  });
  server.Get("/api/runs", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"runs", catalog.runs()}, {"searches", catalog.searches()}, {"problems", catalog.problems()}});
  });
  server.Get(R"(/api/runs/([a-z0-9]+))", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, catalog.run(req.matches[1]));
  });
  server.Get(R"(/api/runs/([a-z0-9]+)/series)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string x = req.has_param("x") ? req.get_param_value("x") : "step";
    std::size_t points = 1000;
    try {
      if (req.has_param("points"))
        points = std::clamp<std::size_t>(std::stoul(req.get_param_value("points")), 3, 100000);
    } catch (const std::exception&) {
    }
    send_json(res, catalog.series(req.matches[1], split(req.get_param_value("keys"), ','), x, points));
  });
  server.Get(R"(/api/runs/([a-z0-9]+)/traces/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const auto file = catalog.trace_file(req.matches[1], req.matches[2]);
    if (file.empty()) return send_json(res, nullptr);
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    res.set_content(s.str(), kJson);
  });
  server.Get("/api/searches",
             [this](const httplib::Request&, httplib::Response& res) { send_json(res, catalog.searches()); });
  server.Get(R"(/api/searches/([a-z0-9]+))", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, catalog.search(req.matches[1]));
  });
}

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
  if (!loopback(options.host()) && options.token().empty()) {
    throw DashboardError("--host " + options.host() +
                         " lets other machines read your runs: give --token TOKEN too (or keep 127.0.0.1)");
  }
  try {
    impl_ = std::make_unique<Impl>(std::move(options));
  } catch (const std::invalid_argument& e) {
    throw DashboardError(e.what());
  }
  auto& i = *impl_;
  i.routes();
  i.port = i.options.port() == 0 ? i.server.bind_to_any_port(i.options.host()) : i.options.port();
  if (i.port <= 0 || (i.options.port() != 0 && !i.server.bind_to_port(i.options.host(), i.options.port()))) {
    throw DashboardError("cannot listen on " + i.options.host() + ":" + std::to_string(i.options.port()) +
                         " (in use? try --port with another number, or 0 for any free one)");
  }
  i.listener = std::thread([&i] { i.server.listen_after_bind(); });
  i.refresher = std::thread([&i] { i.refresh_loop(); });
  // httplib's stop() does nothing before its loop runs: wait for it, so a stop right after the
  // start is not lost.
  for (int ms = 0; ms < 10000 && !i.server.is_running(); ++ms)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

Dashboard::~Dashboard() { stop(); }

int Dashboard::port() const { return impl_->port; }

std::string Dashboard::url() const {
  const std::string host = impl_->options.host() == "0.0.0.0" ? "127.0.0.1" : impl_->options.host();
  return "http://" + host + ":" + std::to_string(impl_->port) + "/" +
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
  impl_->server.stop();
  if (impl_->listener.joinable()) impl_->listener.join();
  if (impl_->refresher.joinable()) impl_->refresher.join();
}

#else  // built without cpp-httplib

struct Dashboard::Impl {};

Dashboard::Dashboard(DashboardOptions) {
  throw DashboardError("this baton was built without cpp-httplib: scripts/install-deps.sh installs libcpp-httplib-dev");
}
Dashboard::~Dashboard() = default;
int Dashboard::port() const { return 0; }
std::string Dashboard::url() const { return {}; }
std::vector<std::string> Dashboard::problems() const { return {}; }
void Dashboard::wait() {}
void Dashboard::stop() {}

#endif

}  // namespace baton
