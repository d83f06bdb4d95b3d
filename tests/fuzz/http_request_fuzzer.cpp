// The dashboard's request handling on arbitrary bytes: the head parser, then the answers to every
// request it accepts (pipelined ones too), over a catalog of one run made at start. Nothing may
// crash, hang or answer with a status outside the server's set.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "api.h"
#include "http.h"
#include "sources.h"

namespace {
namespace fs = std::filesystem;
namespace d = baton::dashboard;

struct World {
  baton::DashboardOptions options;
  std::unique_ptr<d::Catalog> catalog;
  std::unique_ptr<d::Api> api;
  World() {
    const fs::path root = fs::temp_directory_path() / ("baton_fuzz_http_" + std::to_string(::getpid()));
    fs::create_directories(root / "runs" / "a" / "traces");
    std::ofstream(root / "runs" / "a" / "metrics.jsonl") << R"({"step": 1, "train/loss": 0.5})"
                                                         << "\n"
                                                         << R"({"step": 2, "train/loss": 0.25})"
                                                         << "\n";
    std::ofstream(root / "runs" / "a" / "traces" / "t.json") << R"({"traceEvents": []})";
    std::ofstream(root / "runs" / "a" / "recipe.yaml") << "max_duration: 1ep\n";
    options.paths({(root / "runs").string()}).token("secret");
    catalog = std::make_unique<d::Catalog>(options.paths());
    catalog->refresh();
    api = std::make_unique<d::Api>(options, *catalog);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  static const std::set<int> statuses = {200, 400, 401, 403, 404, 405, 413, 431};
  std::string buffer(reinterpret_cast<const char*>(data), size);
  for (int requests = 0; requests < 8; ++requests) {
    d::HttpRequest request;
    std::size_t consumed = 0;
    std::string why;
    const d::ParseStatus status = d::parse_request(buffer, request, consumed, why);
    if (status != d::ParseStatus::kComplete) break;
    if (consumed == 0 || consumed > buffer.size()) std::abort();
    buffer.erase(0, consumed);
    const d::HttpResponse response = world.api->handle(request);
    if (!statuses.count(response.status)) std::abort();
    if (d::serialize(response, true, request.method == "HEAD").empty()) std::abort();
  }
  return 0;
}
