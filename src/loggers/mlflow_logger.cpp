#include "baton/loggers/mlflow_logger.h"

#include <unistd.h>
#include <memory>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/text.h"
#include "baton/io/url.h"
#include "baton/io/write.h"
#include "baton/version.h"

namespace baton {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxParamValue = 6000;  // MLflow's limits
constexpr size_t kMaxTagValue = 8000;
constexpr size_t kBatchEntries = 1000;
constexpr size_t kBatchParams = 100;
constexpr size_t kBatchTags = 100;
constexpr std::uint64_t kMaxArtifact = 1ull << 30;
constexpr auto kGather = std::chrono::seconds(1);

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string base64(std::string_view in) {
  static constexpr char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t n = std::min<size_t>(3, in.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? static_cast<unsigned char>(in[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kTable[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string cut(std::string value, size_t most) {
  if (value.size() > most) value.resize(most);
  return value;
}

// A double as MLflow's JSON reads it (protobuf's mapping: non-finite values as strings).
nlohmann::json metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

double read_metric_value(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.is_string() ? v.get<std::string>() : "NaN";
  if (s == "Infinity") return INFINITY;
  if (s == "-Infinity") return -INFINITY;
  return NAN;
}

}  // namespace

// What waits to be sent: a metric, a param or a tag (a named namespace: the logger's Impl holds them).
namespace mlflow_detail {
struct Entry {
  enum Kind : char { kMetric = 'm', kParam = 'p', kTag = 't' } kind = kMetric;
  std::string key;
  std::string text;  // a param's or a tag's value
  double value = 0;
  int64_t step = 0;
  int64_t ms = 0;
  int64_t end = 0;  // where its line ends in the pending file (0: not there)

  nlohmann::json to_json() const {
    if (kind == kMetric) return {{"metric", key}, {"value", metric_value(value)}, {"step", step}, {"timestamp", ms}};
    return {{kind == kParam ? "param" : "tag", key}, {"value", text}};
  }
  // nullopt for a line that is not an entry (the header, a file, the end).
  static std::optional<Entry> from_json(const nlohmann::json& j) {
    if (!j.is_object()) return std::nullopt;
    if (j.contains("metric") && j["metric"].is_string()) {
      return Entry{kMetric,
                   j["metric"].get<std::string>(),
                   {},
                   read_metric_value(j.value("value", nlohmann::json())),
                   j.value("step", int64_t{0}),
                   j.value("timestamp", now_ms())};
    }
    for (const auto& [name, kind] : {std::pair{"param", kParam}, std::pair{"tag", kTag}}) {
      if (j.contains(name) && j[name].is_string() && j.value("value", nlohmann::json()).is_string()) {
        return Entry{kind, j[name].get<std::string>(), j["value"].get<std::string>()};
      }
    }
    return std::nullopt;
  }
};
}  // namespace mlflow_detail
using mlflow_detail::Entry;

namespace {

// MLflow's error answer: {"error_code": "...", "message": "..."}.
MlflowError answer_error(const std::string& what, const HttpAnswer& answer) {
  if (!answer.error.empty()) return {what + ": " + answer.error, true};
  std::string code, message;
  const auto j = nlohmann::json::parse(answer.body, nullptr, false);
  if (j.is_object()) {
    code = j.value("error_code", std::string());
    message = j.value("message", std::string());
  }
  if (message.empty()) message = answer.body;
  // A server's words reach a terminal: one line, its control characters (ANSI escapes) written out.
  message = one_line(message, 200);
  return {what + ": HTTP " + std::to_string(answer.status) + (message.empty() ? "" : " (" + message + ")"),
          answer.passing(), one_line(code, 100)};
}

// The text at `path` of a server's JSON answer; an answer without it is the server's fault, said so.
std::string answer_text(const nlohmann::json& answer, std::initializer_list<const char*> path,
                        const std::string& what) {
  const nlohmann::json* j = &answer;
  std::string dotted;
  bool found = true;
  for (const char* key : path) {
    dotted.append(dotted.empty() ? "" : ".").append(key);
    if (!j->is_object() || !j->contains(key)) {
      found = false;
      break;
    }
    j = &(*j)[key];
  }
  if (!found) throw MlflowError(what + ": an answer without " + dotted, true);
  if (!j->is_string()) throw MlflowError(what + ": an answer whose " + dotted + " is not text", true);
  return j->get<std::string>();
}

MlflowClient::RunInfo run_info(const nlohmann::json& answer, const std::string& what) {
  MlflowClient::RunInfo info;
  info.run_id = answer_text(answer, {"run", "info", "run_id"}, what);
  const auto& fields = answer["run"]["info"];
  if (fields.contains("experiment_id") && fields["experiment_id"].is_string())
    info.experiment_id = fields["experiment_id"].get<std::string>();
  if (fields.contains("artifact_uri") && fields["artifact_uri"].is_string())
    info.artifact_uri = fields["artifact_uri"].get<std::string>();
  return info;
}

// Where a server's `file:` artifact store would have baton write: only inside `root`, the folder the
// run's own configuration names (artifact_root); a server's word is not a path.
fs::path local_artifact_folder(const std::string& uri, const std::string& root) {
  std::string path = uri;
  if (path.starts_with("file://")) {
    path = path.substr(7);
    if (!path.starts_with("/") && !path.starts_with("localhost/")) {
      throw MlflowError("the run's artifact store '" + one_line(uri) + "' names another machine", false);
    }
    if (path.starts_with("localhost/")) path = path.substr(9);
  } else if (path.starts_with("file:")) {
    path = path.substr(5);
  }
  fs::path folder(path);
  if (!folder.is_absolute()) {
    throw MlflowError("the run's artifact store " + one_line(uri) +
                          " is not one baton writes (mlflow-artifacts:/ through the server, or a local folder): "
                          "start the server with --serve-artifacts",
                      false);
  }
  for (const auto& part : folder) {
    if (part == "..") throw MlflowError("the run's artifact store '" + one_line(uri) + "' climbs out with '..'", false);
  }
  if (root.empty() || !resolves_inside(folder.string(), root)) {
    throw MlflowError("the run's artifact store '" + one_line(uri) + "' is a local folder " +
                          (root.empty() ? std::string("and loggers.mlflow.artifact_root names none")
                                        : "outside loggers.mlflow.artifact_root " + root) +
                          ": baton writes a server's local store only inside that folder (or start the server with "
                          "--serve-artifacts)",
                      false);
  }
  return folder;
}

// The path of an mlflow-artifacts: URI (mlflow-artifacts:/PATH or ://host/PATH) as the proxy's URL
// path; a path that could reach another endpoint of the server is refused.
std::string proxy_path(const std::string& uri) {
  std::string path = uri.substr(17);
  if (path.starts_with("//")) path = path.substr(std::min(path.size(), path.find('/', 2)));
  while (path.starts_with("/")) path.erase(0, 1);
  const bool odd = std::any_of(path.begin(), path.end(), [](unsigned char c) {
    return c < 0x20 || c == 0x7f || c == '?' || c == '#' || c == '%' || c == '\\';
  });
  if (odd || path == ".." || path.starts_with("../") || path.find("/../") != std::string::npos ||
      path.ends_with("/..")) {
    throw MlflowError("the run's artifact store '" + one_line(uri) + "' is not a plain path", false);
  }
  return path;
}

// The git directory of the work tree holding `start` ("" when none): .git as a folder, or a file
// "gitdir: PATH" (a worktree, a submodule).
fs::path git_dir_above(fs::path start) {
  std::error_code ec;
  start = fs::weakly_canonical(fs::absolute(start, ec), ec);
  for (fs::path p = start; !p.empty(); p = p.parent_path()) {
    fs::path dot = p / ".git";
    if (fs::is_directory(dot, ec)) return dot;
    if (fs::is_regular_file(dot, ec)) {
      std::string text = read_file(dot.string(), {.max_bytes = 4096});
      if (!text.starts_with("gitdir: ")) return {};
      text = text.substr(8);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      const fs::path dir(text);
      return dir.is_absolute() ? dir : p / dir;
    }
    if (p == p.parent_path()) break;
  }
  return {};
}

std::string first_line(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return {};
  std::string text = read_file(file.string(), {.max_bytes = 1 << 20});
  return text.substr(0, text.find('\n'));
}

bool is_commit(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c); });
}

}  // namespace

struct MlflowClient::Impl {
  std::string root_;
  std::string artifact_root_;
  double request_seconds_;
  std::vector<std::string> headers_;
  const std::atomic<bool>* cancel_ = nullptr;
};

MlflowClient::~MlflowClient() = default;

void MlflowClient::set_request_seconds(double seconds) { impl_->request_seconds_ = seconds; }
void MlflowClient::set_artifact_root(std::string folder) { impl_->artifact_root_ = std::move(folder); }
void MlflowClient::set_cancel(const std::atomic<bool>* cancel) { impl_->cancel_ = cancel; }

// ---- options, params, git ----

void read_mlflow_options(OptionReader& r, MlflowOptions& o) {
  r.check_keys({"tracking_uri", "experiment", "run_name", "tags", "flush_seconds", "max_buffered", "artifact_root"});
  r.read("tracking_uri", o.tracking_uri());
  if (!r.has("tracking_uri")) r.fail_self("tracking_uri is required (the server's http:// or https:// address)");
  if (!is_url(o.tracking_uri())) {
    r.fail("tracking_uri", "expected the server's http:// or https:// address, got '" + o.tracking_uri() + "'");
  }
  r.read("experiment", o.experiment());
  if (o.experiment().empty()) r.fail("experiment", "expected an experiment's name, got ''");
  r.read("run_name", o.run_name());
  if (r.has("tags")) {
    OptionReader tags = r.child("tags");
    if (!tags.json().is_object()) r.fail("tags", "expected a mapping of tag names to values");
    for (const auto& key : tags.keys()) o.tags()[key] = tags.text(key, "");
    tags.finish();
  }
  r.read("flush_seconds", o.flush_seconds());
  if (!(o.flush_seconds() >= 0 && o.flush_seconds() <= 3600)) {  // 0: what is not sent at the end is kept at once
    r.fail("flush_seconds", "expected seconds from 0 to 3600, got " + nlohmann::json(o.flush_seconds()).dump());
  }
  r.read("artifact_root", o.artifact_root());
  if (r.has("artifact_root") && !fs::path(o.artifact_root()).is_absolute()) {
    r.fail("artifact_root", "expected an absolute folder (where a server's file: artifact store may be), got '" +
                                o.artifact_root() + "'");
  }
  r.read("max_buffered", o.max_buffered());
  if (o.max_buffered() < 100) r.fail("max_buffered", "expected at least 100 entries");
}

std::vector<std::pair<std::string, std::string>> mlflow_params(const nlohmann::json& hyperparameters) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto walk = [&](const auto& self, const nlohmann::json& j, const std::string& prefix) -> void {
    if (j.is_object() && !j.empty()) {
      for (const auto& [key, value] : j.items())
        self(self, value, prefix.empty() ? key : std::string(prefix).append(".").append(key));
      return;
    }
    if (prefix.empty()) return;
    out.emplace_back(cut(prefix, 250), cut(j.is_string() ? j.get<std::string>() : j.dump(), kMaxParamValue));
  };
  walk(walk, hyperparameters, "");
  return out;
}

std::string git_commit_of(const std::string& path) {
  try {
    const fs::path git = git_dir_above(fs::path(path).parent_path());
    if (git.empty()) return {};
    std::string head = first_line(git / "HEAD");
    if (is_commit(head)) return head;  // a detached HEAD
    if (!head.starts_with("ref: ")) return {};
    const std::string ref = head.substr(5);
    fs::path common = git;  // a worktree's refs are in its common folder
    if (const std::string c = first_line(git / "commondir"); !c.empty())
      common = fs::path(c).is_absolute() ? fs::path(c) : git / c;
    for (const fs::path& dir : {git, common}) {
      if (std::string id = first_line(dir / ref); is_commit(id)) return id;
    }
    std::error_code ec;
    if (!fs::is_regular_file(common / "packed-refs", ec)) return {};
    const std::string packed = read_file((common / "packed-refs").string());
    for (size_t at = 0; at < packed.size();) {
      const size_t end = std::min(packed.find('\n', at), packed.size());
      const std::string_view line(packed.data() + at, end - at);
      if (line.size() > 41 && line.substr(41) == ref && is_commit(std::string(line.substr(0, 40))))
        return std::string(line.substr(0, 40));
      at = end + 1;
    }
  } catch (const std::exception&) {  // an unreadable .git: no commit to tell
  }
  return {};
}

// ---- the client ----

MlflowClient::MlflowClient(std::string tracking_uri, double request_seconds) : impl_(std::make_unique<Impl>()) {
  impl_->root_ = std::move(tracking_uri);
  impl_->request_seconds_ = request_seconds;
  while (!impl_->root_.empty() && impl_->root_.back() == '/') impl_->root_.pop_back();
  const char* token = std::getenv("MLFLOW_TRACKING_TOKEN");
  const char* user = std::getenv("MLFLOW_TRACKING_USERNAME");
  const char* password = std::getenv("MLFLOW_TRACKING_PASSWORD");
  if (token && *token) {
    impl_->headers_.push_back(std::string("Authorization: Bearer ") + token);
  } else if (user && *user) {
    impl_->headers_.push_back("Authorization: Basic " + base64(std::string(user) + ":" + (password ? password : "")));
  }
}

nlohmann::json MlflowClient::call(const std::string& method, const std::string& endpoint,
                                  const nlohmann::json& body) const {
  const std::string url = impl_->root_ + "/api/2.0/mlflow/" + endpoint;
  const HttpAnswer answer = http_request(method, url, method == "GET" ? std::string() : body.dump(), "application/json",
                                         impl_->headers_, impl_->request_seconds_, impl_->cancel_);
  if (!answer.ok()) throw answer_error(impl_->root_ + " " + endpoint, answer);
  auto j = nlohmann::json::parse(answer.body, nullptr, false);
  if (j.is_discarded()) throw MlflowError(impl_->root_ + " " + endpoint + ": an answer that is not JSON", true);
  return j;
}

std::string MlflowClient::experiment_id(const std::string& name) const {
  std::string query;
  for (const unsigned char c : name) {  // percent-encoded
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      query += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      query += hex;
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      return answer_text(call("GET", "experiments/get-by-name?experiment_name=" + query, {}),
                         {"experiment", "experiment_id"}, impl_->root_ + " experiments/get-by-name");
    } catch (const MlflowError& e) {
      if (e.code() != "RESOURCE_DOES_NOT_EXIST") throw;
    }
    try {
      return answer_text(call("POST", "experiments/create", {{"name", name}}), {"experiment_id"},
                         impl_->root_ + " experiments/create");
    } catch (const MlflowError& e) {
      if (e.code() != "RESOURCE_ALREADY_EXISTS") throw;  // made meanwhile by another run: read it again
    }
  }
  throw MlflowError(impl_->root_ + ": experiment '" + name + "' could not be made", true);
}

MlflowClient::RunInfo MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name,
                                               const MlflowTags& tags) const {
  nlohmann::json body = {{"experiment_id", experiment_id}, {"start_time", now_ms()}};
  if (!run_name.empty()) body["run_name"] = run_name;
  body["tags"] = nlohmann::json::array();
  for (const auto& [key, value] : tags) body["tags"].push_back({{"key", key}, {"value", cut(value, kMaxTagValue)}});
  return run_info(call("POST", "runs/create", body), impl_->root_ + " runs/create");
}

MlflowClient::RunInfo MlflowClient::get_run(const std::string& run_id) const {
  return run_info(call("GET", "runs/get?run_id=" + run_id, {}), impl_->root_ + " runs/get");
}

void MlflowClient::log_batch(const std::string& run_id, const nlohmann::json& metrics, const nlohmann::json& params,
                             const nlohmann::json& tags) const {
  call("POST", "runs/log-batch", {{"run_id", run_id}, {"metrics", metrics}, {"params", params}, {"tags", tags}});
}

void MlflowClient::update_run(const std::string& run_id, const std::string& status) const {
  nlohmann::json body = {{"run_id", run_id}, {"status", status}};
  if (status != "RUNNING") body["end_time"] = now_ms();
  call("POST", "runs/update", body);
}

void MlflowClient::upload_artifact(const RunInfo& run, const std::string& name, const std::string& bytes) const {
  const std::string& uri = run.artifact_uri;
  if (!is_plain_name(name) || one_line(name) != name) {
    throw MlflowError("artifact '" + one_line(name) + "' is not the name of a file of the run folder", false);
  }
  if (uri.starts_with("mlflow-artifacts:")) {  // the server's proxy
    const std::string url = impl_->root_ + "/api/2.0/mlflow-artifacts/artifacts/" + proxy_path(uri) + "/" + name;
    const HttpAnswer answer = http_request("PUT", url, bytes, "application/octet-stream", impl_->headers_,
                                           impl_->request_seconds_, impl_->cancel_);
    if (!answer.ok()) throw answer_error(impl_->root_ + " artifact " + name, answer);
    return;
  }
  if (uri.find("://") != std::string::npos && !uri.starts_with("file://")) {
    throw MlflowError("the run's artifact store " + one_line(uri) +
                          " is not one baton writes (mlflow-artifacts:/ through the server, or a local folder): "
                          "start the server with --serve-artifacts",
                      false);
  }
  const fs::path dir = local_artifact_folder(uri, impl_->artifact_root_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  try {
    write_file_atomically((dir / name).string(), bytes);
  } catch (const std::exception& e) {
    throw MlflowError(e.what(), false);
  }
}

// ---- the logger ----

// Every entry goes first to FOLDER/mlflow_pending.jsonl (a line, flushed: a kill -9 loses none), and
// to the buffer in memory while it has room; the sending thread reads back what it could not hold.
// mlflow.json's "sent" is how far into that file the server has it all, so a resumed run sends the
// rest. Without a folder the buffer alone holds them, and what it cannot hold is lost (and counted).

struct MlflowLogger::Impl {
  explicit Impl(MlflowOptions options);
  // What the sending thread does next, taken under the lock.
  enum class Work { kNone, kRun, kBatch, kFile, kEnd };
  struct Next {
    Work work = Work::kNone;
    std::vector<Entry> entries = {};
    std::string file = {};
  };

  void push(std::vector<Entry> entries);
  void loop();
  Next take();
  void perform(const Next& next);
  void done(const Next& next, const MlflowError* error);
  void ensure_run();
  void refill();
  void open_pending();
  void save_run_file();
  void close();
  void write_unsent();
  void load_unsent(std::vector<Entry>& entries);

  MlflowOptions o;
  MlflowClient client;
  MlflowTags run_tags;  // given when the run is made
  std::mutex mu;
  std::condition_variable wake, changed;  // changed: the thread ended, or the run was made
  std::deque<Entry> queue;                // the oldest entries not sent
  std::FILE* pending = nullptr;           // FOLDER/mlflow_pending.jsonl
  int64_t pending_size = 0;               // its bytes
  int64_t loaded_to = 0;                  // where the queue's last entry ends in it
  int64_t in_file = 0;                    // entries after that, only in the file
  int64_t sent_to = 0;                    // where the last sent entry ends in it
  bool sent_moved = false;                // sent_to is not in mlflow.json yet
  int64_t lost = 0;                       // over the buffer with no folder to keep them
  std::vector<std::string> files, old_files;
  size_t one_by_one = 0;  // entries to send singly (a batch the server refused: find which)
  int64_t refused = 0;
  std::string first_refusal, last_error;
  MlflowClient::RunInfo run;
  std::string end_status = "FINISHED";
  bool status_given = false;  // set_end_status was called
  bool backing_off = false;   // the last attempt failed: next_try is a back-off's
  bool have_run = false, closing = false, ended = false, give_up = false, finished = false, closed = false;
  Clock::time_point next_try = Clock::now(), deadline;
  double wait = 0.5;
  int64_t unsent = 0;
  std::atomic<bool> cancel{false};  // past the wait at close: a request in flight ends
  std::thread thread;
  std::atomic<bool> started_{false};  // the first event came
};

MlflowLogger::Impl::Impl(MlflowOptions options) : o(std::move(options)), client(o.tracking_uri(), o.request_seconds()) {
  client.set_cancel(&cancel);
  client.set_artifact_root(o.artifact_root());
  run_tags = o.tags();
  run_tags["baton.version"] = BATON_VERSION_STRING;
  run_tags["baton.host"] = host_name();
  run_tags["mlflow.source.type"] = "LOCAL";
  if (const char* user = std::getenv("USER"); user && *user) run_tags["mlflow.user"] = user;
  if (!o.source().empty()) {
    run_tags["mlflow.source.name"] = o.source();
    if (const std::string commit = git_commit_of(o.source()); !commit.empty())
      run_tags["mlflow.source.git.commit"] = commit;
  }
  if (!o.parent_run_id().empty()) run_tags["mlflow.parentRunId"] = o.parent_run_id();
  if (!o.folder().empty()) open_pending();
}

// The pending file: a resumed run's is kept from where the server has it all (mlflow.json's "sent"),
// and a run's unsent entries join it; a new run's starts empty.
void MlflowLogger::Impl::open_pending() {
  const RunDir dir(o.folder());
  std::error_code ec;
  std::vector<Entry> unsent_entries;
  if (o.resume()) {
    if (fs::is_regular_file(dir.mlflow(), ec)) {
      const auto j = nlohmann::json::parse(read_file(dir.mlflow().string(), {.max_bytes = 1 << 16}), nullptr, false);
      if (j.is_object() && j.value("sent", nlohmann::json()).is_number_integer()) sent_to = j["sent"].get<int64_t>();
    }
    load_unsent(unsent_entries);
  }
  pending = std::fopen(dir.mlflow_pending().c_str(), o.resume() ? "a+" : "w+");
  if (pending == nullptr) return push(std::move(unsent_entries));  // the buffer alone, then
  std::fseek(pending, 0, SEEK_END);
  pending_size = std::ftell(pending);
  sent_to = std::clamp<int64_t>(sent_to, 0, pending_size);
  loaded_to = sent_to;
  std::fseek(pending, sent_to, SEEK_SET);
  for (int c, at_line_start = 1; (c = std::fgetc(pending)) != EOF;) {
    in_file += at_line_start;  // lines after sent_to (a line cut by a kill counts, and is skipped)
    at_line_start = c == '\n';
  }
  std::fseek(pending, 0, SEEK_END);
  if (pending_size > 0 && loaded_to < pending_size) {  // a line cut short by a kill: ended, so the next is whole
    std::fseek(pending, pending_size - 1, SEEK_SET);
    if (std::fgetc(pending) != '\n') {
      std::fseek(pending, 0, SEEK_END);
      std::fputc('\n', pending);
      ++pending_size;
    }
    std::fseek(pending, 0, SEEK_END);
  }
  // The unsent file stays until what replaces it is safe (write_unsent): a sync killed now loses
  // nothing (its entries, sent again, are the same values at the same steps).
  push(std::move(unsent_entries));
}

void MlflowLogger::Impl::push(std::vector<Entry> entries) {
  if (entries.empty()) return;
  {
    std::lock_guard lock(mu);
    const auto room = static_cast<size_t>(o.max_buffered());
    for (Entry& e : entries) {
      if (pending != nullptr) {
        const std::string line = e.to_json().dump() + "\n";
        if (std::fwrite(line.data(), 1, line.size(), pending) == line.size()) {
          pending_size += static_cast<int64_t>(line.size());
          e.end = pending_size;
        }
      }
      if (in_file == 0 && queue.size() < room) {
        if (e.end > 0) loaded_to = e.end;
        queue.push_back(std::move(e));
      } else if (e.end > 0) {
        ++in_file;
      } else {
        ++lost;
      }
    }
    if (pending != nullptr) std::fflush(pending);
  }
  wake.notify_one();
}

// Entries kept only in the pending file back into the buffer, once it has emptied.
void MlflowLogger::Impl::refill() {
  std::fseek(pending, loaded_to, SEEK_SET);
  char* line = nullptr;
  size_t capacity = 0;
  for (int64_t n = 0; in_file > 0 && n < o.max_buffered() / 2; ++n) {
    const ssize_t length = getline(&line, &capacity, pending);
    if (length <= 0) {
      in_file = 0;  // the file was cut: nothing more to read
      break;
    }
    --in_file;
    loaded_to += length;
    auto e =
        Entry::from_json(nlohmann::json::parse(std::string_view(line, static_cast<size_t>(length)), nullptr, false));
    if (!e) continue;  // a line cut short by a kill
    e->end = loaded_to;
    queue.push_back(std::move(*e));
  }
  std::free(line);
  std::fseek(pending, 0, SEEK_END);                                           // appends go on
  if (queue.empty() && in_file == 0) sent_to = loaded_to, sent_moved = true;  // only cut lines were left
}

MlflowLogger::Impl::Next MlflowLogger::Impl::take() {
  if (!have_run) return {Work::kRun};
  if (queue.empty() && in_file > 0 && pending != nullptr) refill();
  if (!queue.empty()) {
    Next next{Work::kBatch};
    size_t params = 0, tags = 0;
    const size_t most = one_by_one > 0 ? 1 : kBatchEntries;
    for (const Entry& e : queue) {
      if (next.entries.size() == most) break;
      if (e.kind == Entry::kParam && ++params > kBatchParams) break;
      if (e.kind == Entry::kTag && ++tags > kBatchTags) break;
      next.entries.push_back(e);
    }
    return next;
  }
  if (!closing) return {};
  if (!files.empty()) return {Work::kFile, {}, files.front()};
  if (!ended) return {Work::kEnd};
  return {};
}

// FOLDER/mlflow.json: the run, and how far into the pending file the server has everything.
void MlflowLogger::Impl::save_run_file() {
  nlohmann::json j;
  {
    std::lock_guard lock(mu);
    j = {{"tracking_uri", o.tracking_uri()},   {"experiment", o.experiment()},
         {"experiment_id", run.experiment_id}, {"run_id", run.run_id},
         {"artifact_uri", run.artifact_uri},   {"sent", sent_to}};
    sent_moved = false;
  }
  write_file_atomically(RunDir(o.folder()).mlflow().string(), j.dump(2) + "\n");
}

void MlflowLogger::Impl::ensure_run() {
  const fs::path saved = RunDir(o.folder()).mlflow();
  std::error_code ec;
  if (o.resume() && !o.folder().empty() && fs::is_regular_file(saved, ec)) {
    const auto j = nlohmann::json::parse(read_file(saved.string(), {.max_bytes = 1 << 16}), nullptr, false);
    if (j.is_object() && j.value("tracking_uri", std::string()) == o.tracking_uri() && j.contains("run_id")) {
      try {
        run = client.get_run(j["run_id"].get<std::string>());
        client.update_run(run.run_id, "RUNNING");
        return;
      } catch (const MlflowError& e) {
        if (e.passing()) throw;  // else the run is gone from the server: a new one
      }
    }
  }
  run = client.create_run(client.experiment_id(o.experiment()), o.run_name(), run_tags);
  if (!o.folder().empty()) save_run_file();
}

void MlflowLogger::Impl::perform(const Next& next) {
  if (closing) {  // a request never outlives the wait at close by much
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    client.set_request_seconds(std::clamp(left, 1.0, o.request_seconds()));
  }
  switch (next.work) {
    case Work::kRun: ensure_run(); return;
    case Work::kBatch: {
      nlohmann::json metrics = nlohmann::json::array(), params = nlohmann::json::array(),
                     tags = nlohmann::json::array();
      for (const Entry& e : next.entries) {
        if (e.kind == Entry::kMetric) {
          metrics.push_back({{"key", e.key}, {"value", metric_value(e.value)}, {"timestamp", e.ms}, {"step", e.step}});
        } else {
          (e.kind == Entry::kParam ? params : tags).push_back({{"key", e.key}, {"value", e.text}});
        }
      }
      client.log_batch(run.run_id, metrics, params, tags);
      return;
    }
    case Work::kFile: {
      const fs::path path = fs::path(o.folder()) / next.file;
      std::string bytes;
      try {
        bytes = read_file(path.string(), {.what = "the artifact", .max_bytes = kMaxArtifact, .inside = o.folder()});
      } catch (const FileError& e) {
        throw MlflowError(e.what(), false);
      }
      client.upload_artifact(run, next.file, bytes);
      return;
    }
    case Work::kEnd: client.update_run(run.run_id, end_status); return;
    case Work::kNone: return;
  }
}

// After an attempt (`error` null: it worked): the queue, the back-off, what was refused.
void MlflowLogger::Impl::done(const Next& next, const MlflowError* error) {
  const bool refusal = error != nullptr && !error->passing() && next.work != Work::kRun;
  if (error != nullptr && !refusal) {
    backing_off = true;
    if (!give_up) last_error = error->what();  // not "given up": why it did not go before
    next_try = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait * 1000));
    wait = std::min(wait * 2, closing ? 1.0 : 30.0);
    return;
  }
  if (refusal && next.work == Work::kBatch && next.entries.size() > 1) {
    one_by_one = next.entries.size();  // find the entry the server refuses
    return;
  }
  if (refusal && refused++ == 0) first_refusal = error->what();
  switch (next.work) {
    case Work::kRun:
      have_run = true;
      changed.notify_all();  // wait_for_run
      break;
    case Work::kBatch:
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(next.entries.size()));
      one_by_one -= std::min(one_by_one, next.entries.size());
      if (next.entries.back().end > 0) sent_to = next.entries.back().end, sent_moved = true;
      break;
    case Work::kFile: files.erase(files.begin()); break;
    case Work::kEnd: ended = true; break;
    case Work::kNone: break;
  }
  wait = 0.5;
  backing_off = false;
  // Metrics come a few at a time: gathered for a second into one request (at most 1000 entries),
  // unless closing.
  next_try = Clock::now() + (next.work == Work::kBatch ? kGather : Clock::duration::zero());
}

void MlflowLogger::Impl::loop() {
  std::unique_lock lock(mu);
  while (!give_up) {
    if (sent_moved && !o.folder().empty() && have_run) {  // outside the lock: the training thread never waits
      lock.unlock();
      try {
        save_run_file();
      } catch (const std::exception&) {  // the next batch tries again
      }
      lock.lock();
      continue;
    }
    Next next = take();
    if (next.work == Work::kNone) {
      if (closing) break;
      wake.wait(lock);
      continue;
    }
    const bool full = next.work == Work::kBatch && next.entries.size() == kBatchEntries;
    if (Clock::now() < next_try && (backing_off || !(closing || full))) {
      wake.wait_until(lock, next_try);
      continue;
    }
    lock.unlock();
    std::optional<MlflowError> error;
    try {
      perform(next);
    } catch (const MlflowError& e) {
      error = e;
    } catch (const std::exception& e) {  // a folder that cannot be written, an odd answer
      error = MlflowError(e.what(), true);
    }
    lock.lock();
    done(next, error ? &*error : nullptr);
  }
  finished = true;
  changed.notify_all();
}

// A previous run's FOLDER/mlflow_unsent.jsonl: its entries (sent first), files and end.
void MlflowLogger::Impl::load_unsent(std::vector<Entry>& entries) {
  const fs::path path = RunDir(o.folder()).mlflow_unsent();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  const std::string text = read_file(path.string(), {.what = "the unsent MLflow entries", .max_bytes = 1ull << 32});
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const auto j = nlohmann::json::parse(std::string_view(text).substr(at, end - at), nullptr, false);
    at = end + 1;
    if (auto e = Entry::from_json(j)) {
      entries.push_back(std::move(*e));
    } else if (j.is_object() && j.contains("file") && j["file"].is_string()) {
      // Only a file of the run folder itself: a tampered entry naming ../../x is never read or sent.
      const std::string file = j["file"].get<std::string>();
      if (is_plain_name(file) && one_line(file) == file) {
        old_files.push_back(file);
      } else if (refused++ == 0) {
        first_refusal = path.string() + ": file '" + one_line(file, 80) +
                        "' is not a file of the run folder (a plain name); left out";
      }
    } else if (j.is_object() && j.contains("end") && j["end"].is_string()) {
      const std::string end = j["end"].get<std::string>();  // what the run ended as (a training resumed says again)
      if (end == "FINISHED" || end == "FAILED" || end == "KILLED") end_status = end;
    }
  }
}

// After the wait at close: what the server has not got goes to FOLDER/mlflow_unsent.jsonl (a
// header, the entries, the files, the run's end), and the pending file goes.
void MlflowLogger::Impl::write_unsent() {
  std::string lines = nlohmann::json{{"tracking_uri", o.tracking_uri()},
                                     {"experiment", o.experiment()},
                                     {"run_name", o.run_name()},
                                     {"parent_run_id", o.parent_run_id()},
                                     {"source", o.source()},
                                     {"run_id", run.run_id},
                                     {"error", last_error}}
                          .dump() +
                      "\n";
  for (const Entry& e : queue) lines += e.to_json().dump() + "\n";
  unsent = static_cast<int64_t>(queue.size()) + static_cast<int64_t>(files.size()) + lost;
  if (pending != nullptr && in_file > 0) {  // the entries only the file holds (a line a kill cut, left out)
    std::fseek(pending, loaded_to, SEEK_SET);
    char* line = nullptr;
    size_t capacity = 0;
    for (ssize_t n; (n = getline(&line, &capacity, pending)) > 0;) {
      if (!Entry::from_json(nlohmann::json::parse(std::string_view(line, static_cast<size_t>(n)), nullptr, false)))
        continue;
      lines.append(line, static_cast<size_t>(n));
      ++unsent;
    }
    std::free(line);
  }
  for (const auto& file : files) lines += nlohmann::json{{"file", file}}.dump() + "\n";
  if (!ended) lines += nlohmann::json{{"end", end_status}}.dump() + "\n";
  if (pending != nullptr) std::fclose(pending), pending = nullptr;
  if (o.folder().empty()) return;
  const RunDir dir(o.folder());
  try {
    std::error_code ec;
    if (unsent > 0 || !ended) {
      write_file_atomically(dir.mlflow_unsent().string(), lines);
    } else {
      fs::remove(dir.mlflow_unsent(), ec);  // everything reached the server
    }
    fs::remove(dir.mlflow_pending(), ec);  // after: a kill between the two loses nothing
    sent_to = 0;
    if (have_run) save_run_file();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baton: mlflow: %s\n", e.what());
  }
}

void MlflowLogger::Impl::close() {
  {
    std::unique_lock lock(mu);
    if (closed) return;
    closed = true;
    closing = true;
    for (const auto& name : o.artifacts()) {
      std::error_code ec;
      if (!o.folder().empty() && fs::is_regular_file(fs::path(o.folder()) / name, ec)) files.push_back(name);
    }
    for (const auto& name : old_files) {
      if (std::find(files.begin(), files.end(), name) == files.end()) files.push_back(name);
    }
    deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.flush_seconds() * 1000));
    next_try = Clock::now();
    wait = 0.5;
    backing_off = false;  // try at once: the server may be back
    wake.notify_all();
    changed.wait_until(lock, deadline, [&] { return finished; });
    give_up = true;
    cancel = true;
    wake.notify_all();
  }
  if (thread.joinable()) thread.join();
  write_unsent();
  if (unsent > 0 || !ended) {
    const std::string where = o.folder().empty() ? std::string("lost (no run folder)")
                                                 : "kept in " + RunDir(o.folder()).mlflow_unsent().string() +
                                                       " (`baton mlflow sync " + o.folder() + "` sends them)";
    std::fprintf(stderr, "baton: mlflow: %lld entries and files not sent to %s in %.0f s (%s); %s\n",
                 static_cast<long long>(unsent), o.tracking_uri().c_str(), o.flush_seconds(),
                 last_error.empty() ? "the server did not answer in time" : last_error.c_str(), where.c_str());
  }
  if (refused > 0) {
    std::fprintf(stderr, "baton: mlflow: %lld entries or files refused and left out (the first: %s)\n",
                 static_cast<long long>(refused), first_refusal.c_str());
  }
}

MlflowLogger::MlflowLogger(MlflowOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

void MlflowLogger::start() {
  std::lock_guard lock(impl_->mu);
  if (!impl_->thread.joinable() && !impl_->closed) impl_->thread = std::thread([this] { impl_->loop(); });
  impl_->started_ = true;
}

void MlflowLogger::batch_start(State&, Logger&) {
  if (!impl_->started_.load(std::memory_order_relaxed)) start();
}

MlflowLogger::~MlflowLogger() {
  bool started = false;
  {
    std::lock_guard lock(impl_->mu);
    started = impl_->thread.joinable();
    if (!impl_->closed && !impl_->status_given) impl_->end_status = "FAILED";
  }
  if (!started) {  // a run refused before it trained: nothing goes to the server, nothing stays here
    if (impl_->pending != nullptr) std::fclose(impl_->pending);
    std::error_code ec;
    if (!impl_->o.resume() && !impl_->o.folder().empty()) fs::remove(RunDir(impl_->o.folder()).mlflow_pending(), ec);
    return;
  }
  try {
    impl_->close();
  } catch (...) {  // a destructor says nothing more
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

void MlflowLogger::log_metrics(const Metrics& metrics, int64_t step) {
  const int64_t ms = now_ms();
  std::vector<Entry> entries;
  entries.reserve(metrics.size());
  for (const auto& [key, value] : metrics) entries.push_back({Entry::kMetric, key, {}, value, step, ms});
  impl_->push(std::move(entries));
}

void MlflowLogger::log_hyperparameters(const nlohmann::json& hyperparameters) {
  std::vector<Entry> entries;
  for (auto& [key, value] : mlflow_params(hyperparameters)) entries.push_back({Entry::kParam, key, std::move(value)});
  impl_->push(std::move(entries));
}

void MlflowLogger::log_tag(const std::string& key, const std::string& value) {
  impl_->push({{Entry::kTag, key, cut(value, kMaxTagValue)}});
}

void MlflowLogger::set_end_status(const std::string& status) {
  std::lock_guard lock(impl_->mu);
  impl_->end_status = status;
  impl_->status_given = true;
}

void MlflowLogger::post_close() {
  if (impl_->started_.load()) impl_->close();  // else nothing was trained: the destructor discards quietly
}

std::string MlflowLogger::wait_for_run(double seconds) {
  std::unique_lock lock(impl_->mu);
  impl_->changed.wait_for(lock, std::chrono::duration<double>(seconds),
                          [&] { return impl_->have_run || impl_->finished; });
  return impl_->have_run ? impl_->run.run_id : std::string();
}

std::string MlflowLogger::run_id() const {
  std::lock_guard lock(impl_->mu);
  return impl_->have_run ? impl_->run.run_id : std::string();
}

int64_t MlflowLogger::unsent() const {
  std::lock_guard lock(impl_->mu);
  return impl_->unsent;
}

}  // namespace baton
