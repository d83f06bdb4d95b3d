// `baton dashboard`: a read-only web page over run directories and search storages, live.
//
//   Dashboard d(DashboardOptions().paths({"runs/"}).port(8080));   // serves until stop() or destruction
//   std::printf("%s\n", d.url().c_str());
//   d.wait();
//
// PATHS are run directories (metrics.jsonl, summary.json, recipe.yaml, checkpoints/, traces/),
// folders of them (read again as runs appear), and search storages (a SQLite file, sqlite://...,
// postgresql://...). The server re-reads what changed every `refresh_s`; it never writes to a run
// or a storage. JSON under /api/ (docs/dashboard.md), the page at /.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "baton/core/options.h"

namespace baton {

// A dashboard that cannot start: no usable path, a port in use or out of range, a host without a token.
class DashboardError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DashboardOptions {
  BATON_ARG(std::vector<std::string>, paths);
  BATON_ARG(std::string, host) = "127.0.0.1";  // another than a loopback address needs a token
  BATON_ARG(int, port) = 8080;                 // 0: a free port (see Dashboard::port)
  BATON_ARG(std::string, token);       // when set, /api/ answers only ?token=TOKEN or "Authorization: Bearer TOKEN"
  BATON_ARG(double, refresh_s) = 0.5;  // how often changed files and storages are read again
  BATON_ARG(std::string, chart_js) = "/usr/share/javascript/chart.js/chart.min.js";  // Debian's libjs-chart.js
  // Host names a request may name besides localhost, the loopback addresses and the address it
  // listens on (with 0.0.0.0 or ::, this machine's name and addresses): any other Host header is
  // refused, so that a web page cannot read the runs through a name of its own (DNS rebinding).
  BATON_ARG(std::vector<std::string>, allowed_hosts);
};

class Dashboard {
 public:
  // Reads every path once and starts serving. Throws DashboardError when none of the paths is a
  // run, a folder of runs or a storage, the port is taken, or a non-loopback host has no token.
  explicit Dashboard(DashboardOptions options);
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  int port() const;
  std::string url() const;                    // http://HOST:PORT/ (with ?token=... when there is one)
  std::vector<std::string> problems() const;  // paths skipped or unreadable, one line each
  void wait();                                // until stop() is called (from another thread)
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
