// The dashboard's answers: one request in, one response out, with no socket (the server calls it
// from its workers; the fuzzer and the tests call it directly). Private to src/dashboard.
#pragma once

#include <set>
#include <string>

#include "baton/dashboard/dashboard.h"
#include "http.h"
#include "sources.h"

namespace baton::dashboard {

class Api {
 public:
  // `port`: the one the server listens on (a Host header may name it).
  Api(const DashboardOptions& options, const Catalog& catalog);
  // Refuses a Host it does not serve (403), /api/ without the token (401), then routes.
  HttpResponse handle(const HttpRequest& request) const;
  const std::set<std::string>& allowed_hosts() const { return hosts_; }

 private:
  bool host_allowed(const std::string& host_header) const;
  bool authorized(const HttpRequest& request) const;
  HttpResponse route(const HttpRequest& request) const;
  HttpResponse api(const HttpRequest& request) const;
  HttpResponse trace(const std::string& run, const std::string& name) const;

  const DashboardOptions& options_;
  const Catalog& catalog_;
  std::set<std::string> hosts_;  // lower case, without brackets or port
};

}  // namespace baton::dashboard
