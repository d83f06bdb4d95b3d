#include "baton/exec/process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <memory>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <spdlog/spdlog.h>

extern char** environ;

namespace baton {
namespace {

double mono_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

constexpr std::size_t kStderrTail = 2000;

// A trial's environment: this process's, less other trials' variables and the MPI launcher's (a
// trial is a process of its own, not a rank of the job a search may run in: a `baton train` trial
// then starts no data parallelism), plus `extra` and the trial's id and parameters.
std::vector<std::string> trial_environment(int64_t id, const nlohmann::json& parameters,
                                           const std::map<std::string, std::string>& extra) {
  auto launchers = [](const std::string& s) {
    return (s.rfind("OMPI_", 0) == 0 && s.rfind("OMPI_ALLOW_RUN_AS_ROOT", 0) != 0) || s.rfind("PMIX_", 0) == 0 ||
           s.rfind("PMI_", 0) == 0 || s.rfind("SLURM_STEP_NUM_TASKS=", 0) == 0 || s.rfind("MPI_LOCALNRANKS=", 0) == 0;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    const bool replaced = extra.count(s.substr(0, s.find('='))) > 0;  // the trial's own value wins
    if (s.rfind("BATON_TRIAL_", 0) != 0 && !launchers(s) && !replaced) env.push_back(s);
  }
  for (const auto& [k, v] : extra) env.push_back(std::string(k).append("=").append(v));
  env.push_back("BATON_TRIAL_PARAMETERS=" + parameters.dump());
  env.push_back("BATON_TRIAL_ID=" + std::to_string(id));
  return env;
}

// A slot's variables, beside the engine's own.
std::map<std::string, std::string> slot_environment(const TrialSlot& slot, int index,
                                                    std::map<std::string, std::string> env) {
  env["BATON_TRIAL_SLOT"] = std::to_string(index);
  if (!slot.devices.empty()) env["CUDA_VISIBLE_DEVICES"] = env["BATON_TRIAL_DEVICES"] = join_names(slot.devices, ",");
  if (slot.threads > 0) {
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = env["BATON_TRIAL_THREADS"] = std::to_string(slot.threads);
  }
  if (!slot.cpus.empty()) {
    std::vector<std::string> cpus;
    for (int cpu : slot.cpus) cpus.push_back(std::to_string(cpu));
    env["BATON_TRIAL_CPUS"] = join_names(cpus, ",");
  }
  return env;
}

// Runs `spawn` with the calling thread's CPU affinity set to `cpus` (none: unchanged), which the
// process it starts inherits; the thread's own is restored after.
template <typename Spawn>
int spawn_on(const std::vector<int>& cpus, Spawn spawn) {
  if (cpus.empty()) return spawn();
  cpu_set_t saved, wanted;
  CPU_ZERO(&wanted);
  for (int cpu : cpus) CPU_SET(cpu, &wanted);
  const bool pinned = ::pthread_getaffinity_np(::pthread_self(), sizeof saved, &saved) == 0 &&
                      ::pthread_setaffinity_np(::pthread_self(), sizeof wanted, &wanted) == 0;
  const int rc = spawn();
  if (pinned) ::pthread_setaffinity_np(::pthread_self(), sizeof saved, &saved);
  return rc;
}

// Starts `/bin/sh -c command` in a process group of its own (kill() reaches its children too), its
// stdout and stderr on `out` and `err`. posix_spawn's result: 0 or an errno.
int spawn_shell(std::string command, std::vector<std::string> env, int out, int err, pid_t& pid) {
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, err, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::string sh = "/bin/sh", dash_c = "-c";
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

}  // namespace

namespace {

// A name CUDA_VISIBLE_DEVICES takes: an index (0 to 1023), or a GPU-/MIG- UUID.
bool is_device_name(const std::string& name) {
  if (!name.empty() && name.size() <= 4 && name.find_first_not_of("0123456789") == std::string::npos) {
    return std::stoi(name) < 1024 && (name == "0" || name[0] != '0');
  }
  const bool uuid = name.rfind("GPU-", 0) == 0 || name.rfind("MIG-", 0) == 0;
  return uuid && name.size() > 4 && name.size() <= 96 &&
         name.find_first_not_of("0123456789abcdefABCDEF-/", 4) == std::string::npos;
}

}  // namespace

std::vector<TrialSlot> make_trial_slots(const std::vector<std::string>& devices, int per_trial, int threads, int count,
                                        const std::vector<int>& cpus) {
  std::vector<TrialSlot> slots;
  if (!devices.empty()) {
    for (auto it = devices.begin(); it != devices.end(); ++it) {
      if (it->empty()) throw std::invalid_argument("--devices: an empty device name");
      if (!is_device_name(*it)) {  // CUDA_VISIBLE_DEVICES would hide every device: trials on the CPU
        throw std::invalid_argument("--devices: '" + it->substr(0, 40) +
                                    "' is not a device (an index such as 0, or a GPU-... or MIG-... UUID as "
                                    "nvidia-smi -L prints it)");
      }
      if (std::find(devices.begin(), it, *it) != it) {
        throw std::invalid_argument("--devices: device " + *it + " is named twice");
      }
    }
    if (per_trial < 1 || per_trial > static_cast<int>(devices.size())) {
      throw std::invalid_argument("--devices-per-trial " + std::to_string(per_trial) + ": expected 1 to " +
                                  std::to_string(devices.size()) + " (the number of --devices)");
    }
    for (auto it = devices.begin(); devices.end() - it >= per_trial; it += per_trial) {
      slots.push_back({{it, it + per_trial}, 0, {}});
    }
    count = static_cast<int>(slots.size());
  }
  if (threads < 0) throw std::invalid_argument("--threads-per-trial: expected a positive number of threads");
  if (threads == 0) return slots;
  if (count < 1) throw std::invalid_argument("--threads-per-trial: no trial slots");
  const auto cores = static_cast<int64_t>(cpus.size());
  if (static_cast<int64_t>(threads) * count > cores) {
    throw std::invalid_argument("--threads-per-trial " + std::to_string(threads) + " for " + std::to_string(count) +
                                " trials at once needs " + std::to_string(threads * count) +
                                " cores; this machine has " + std::to_string(cores) +
                                " (fewer threads, or fewer trials at once)");
  }
  slots.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto& slot = slots[static_cast<size_t>(i)];
    slot.threads = threads;
    for (int c = 0; c < threads; ++c)
      slot.cpus.push_back(cpus[static_cast<size_t>(i) * static_cast<size_t>(threads) + static_cast<size_t>(c)]);
  }
  return slots;
}

std::vector<int> usable_cpus() {
  cpu_set_t set;
  std::vector<int> out;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
    }
  }
  if (out.empty()) out.push_back(0);
  return out;
}

namespace {
constexpr std::size_t kMaxProtocolValues = 64;
}  // namespace

std::optional<nlohmann::json> parse_protocol_line(const std::string& line) {
  static const std::string kPrefix = "baton:";
  if (line.rfind(kPrefix, 0) != 0) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line.substr(kPrefix.size()));
  } catch (const nlohmann::json::exception&) {  // not JSON, or a number no double holds (1e999)
    throw std::invalid_argument("not JSON (or a number out of range) after 'baton:': " + line.substr(0, 200));
  }
  const bool inter = j.is_object() && j.contains("intermediate");
  const bool fin = j.is_object() && j.contains("final");
  if (inter == fin) {
    throw std::invalid_argument("expected {\"intermediate\": v, \"step\": n} or {\"final\": v}, got " + j.dump());
  }
  auto check_number = [&](const nlohmann::json& v) {
    if (!v.is_number()) throw std::invalid_argument("the value is not a number: " + j.dump());
    if (!std::isfinite(v.get<double>())) throw std::invalid_argument("the value is not finite: " + line.substr(0, 200));
  };
  // A list: several objectives' final values, or the constrained metrics' values.
  auto check_list = [&](const nlohmann::json& v, const char* what) {
    if (!v.is_array() || v.empty() || v.size() > kMaxProtocolValues)
      throw std::invalid_argument(std::string(what) + " must be a number or a list of 1 to 64 numbers, got " +
                                  v.dump().substr(0, 200));
    for (const auto& x : v) check_number(x);
  };
  const auto& v = j[inter ? "intermediate" : "final"];
  if (fin && v.is_array())
    check_list(v, "\"final\"");
  else
    check_number(v);
  if (j.contains("constraints")) {
    if (inter) throw std::invalid_argument("\"constraints\" go with the final value, not an intermediate one");
    check_list(j["constraints"], "\"constraints\"");
  }
  if (j.contains("paused") && (inter || !j["paused"].is_boolean() || !j.contains("step")))
    throw std::invalid_argument("\"paused\" is true or false, with a final value and its step: " +
                                j.dump().substr(0, 200));
  if (j.contains("step")) {
    // A whole number an int64 holds, kept exactly (2^64 - 1 would wrap to -1 and a float lose digits).
    const auto& step = j["step"];
    const bool fits = step.is_number_unsigned()
                          ? step.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                          : step.is_number_integer() && step.get<int64_t>() >= 0;
    if (!fits) throw std::invalid_argument("the step must be a whole number from 0 to 2^63 - 1, got " + step.dump());
  }
  return j;
}

namespace {

// A final line whose count of values or constraints is not the search's.
std::string protocol_count_error(const ProcessEngineOptions& o, const nlohmann::json& j) {
  const std::size_t n = o.objectives();
  std::string expected =
      n == 1 ? "{\"final\": v" : "{\"final\": [" + std::to_string(n) + " values, in the order of --objective]";
  if (o.constraints() > 0)
    expected += ", \"constraints\": [" + std::to_string(o.constraints()) + " values, in the order of --constraint]";
  return "trial protocol: the search expects " + expected + "}, got " + j.dump().substr(0, 200);
}

}  // namespace

struct ProcessEngine::Impl {
  ProcessEngineOptions options_;
  std::map<int64_t, std::unique_ptr<Run>> running_;  // touched by the monitor thread only
  std::vector<int64_t> slot_trial_;                  // each slot's trial, or -1 (monitor thread only)
  std::set<int64_t> kill_requests_;
  int active_ = 0;  // started, not yet finished (under mutex_)
  int wake_pipe_[2] = {-1, -1};
  std::thread monitor_;
};

struct ProcessEngine::Run {
  pid_t pid = -1;
  int out = -1, err = -1;
  std::string out_buf, err_tail;
  double deadline = 0.0;  // 0: none
  double kill_at = 0.0;   // SIGKILL after SIGTERM
  bool interrupted = false, timed_out = false, final_reported = false;
  std::string protocol_error;
  int64_t auto_step = 0;
  std::ofstream out_log, err_log;
  int pidfd = -1;       // readable when the process ends (Linux 5.3+; else the monitor polls)
  bool exited = false;  // reaped: `status` holds how it ended
  int status = 0;
  double close_at = 0.0;  // when the pipes are closed though a child of the trial still holds them
};

ProcessEngine::ProcessEngine(ProcessEngineOptions options)
    : QueuedEngine("ProcessEngine"), impl_(std::make_unique<Impl>()) {
  impl_->options_ = std::move(options);
  if (impl_->options_.command().empty()) throw std::invalid_argument("ProcessEngine: no command");
  if (impl_->options_.workers() < 1) throw std::invalid_argument("ProcessEngine: workers must be at least 1");
  if (impl_->options_.timeout_s() && !(*impl_->options_.timeout_s() > 0))
    throw std::invalid_argument("ProcessEngine: timeout must be > 0");
  if (!impl_->options_.slots().empty()) {
    impl_->options_.workers(std::min(impl_->options_.workers(), static_cast<int>(impl_->options_.slots().size())));
    impl_->slot_trial_.assign(impl_->options_.slots().size(), -1);
  }
  if (::pipe2(impl_->wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("ProcessEngine: pipe failed");
  impl_->monitor_ = std::thread([this] { monitor(); });
}

ProcessEngine::~ProcessEngine() {
  shutdown();
  ::close(impl_->wake_pipe_[0]);
  ::close(impl_->wake_pipe_[1]);
}

void ProcessEngine::wake() {
  const char c = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake_pipe_[1], &c, 1);
}

void ProcessEngine::queued(int64_t) { wake(); }

void ProcessEngine::stop_running(int64_t id) {
  impl_->kill_requests_.insert(id);
  wake();
}

int ProcessEngine::idle_workers() const {
  std::lock_guard lock(table_mutex());
  return std::max(0, impl_->options_.workers() - impl_->active_ - static_cast<int>(queue_locked().size()));
}

void ProcessEngine::shutdown() {
  {
    std::lock_guard lock(table_mutex());
    if (shutting_down_locked()) return;
  }
  close_queue([this] { wake(); });
  if (impl_->monitor_.joinable()) impl_->monitor_.join();
}

void ProcessEngine::start(int64_t id) {
  nlohmann::json parameters;
  {
    std::lock_guard lock(table_mutex());
    parameters = trial_locked(id).parameters;
  }
  TrainingStart started(id);
  dispatch(started);
  // A free slot (there is one: no more trials run than slots).
  const auto slot = std::find(impl_->slot_trial_.begin(), impl_->slot_trial_.end(), -1);
  const TrialSlot* where = nullptr;
  ProcessEngineOptions::Env env = impl_->options_.env();
  if (impl_->options_.trial_env()) {
    for (auto& [name, value] : impl_->options_.trial_env()(id)) env[name] = value;
  }
  if (slot != impl_->slot_trial_.end()) {
    *slot = id;
    const auto index = static_cast<int>(slot - impl_->slot_trial_.begin());
    where = &impl_->options_.slots()[static_cast<size_t>(index)];
    env = slot_environment(*where, index, std::move(env));
  }
  auto fail = [&](const std::string& why) {
    std::replace(impl_->slot_trial_.begin(), impl_->slot_trial_.end(), id, int64_t{-1});
    TrainingEnd end(id, TrialStatus::kFailed, why);
    dispatch(end);
    std::lock_guard lock(table_mutex());
    --impl_->active_;
  };
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    return fail(std::string("could not create pipes: ") + std::strerror(errno));
  }
  auto run = std::make_unique<Run>();
  const int rc = spawn_on(where != nullptr ? where->cpus : std::vector<int>{}, [&] {
    return spawn_shell(impl_->options_.command(), trial_environment(id, parameters, env), out[1], err[1], run->pid);
  });
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return fail(std::string("could not start /bin/sh: ") + std::strerror(rc));
  }
  run->out = out[0];
  run->err = err[0];
  run->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, run->pid, 0));
  if (impl_->options_.timeout_s()) run->deadline = mono_s() + *impl_->options_.timeout_s();
  if (!impl_->options_.log_dir().empty()) {
    const auto dir = impl_->options_.log_dir() / std::to_string(id);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    run->out_log.open(dir / "stdout.log", std::ios::app);
    run->err_log.open(dir / "stderr.log", std::ios::app);
  }
  impl_->running_[id] = std::move(run);
}

void ProcessEngine::finish(int64_t id, Run& run) {
  int status = run.status;
  while (!run.exited && ::waitpid(run.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (run.pidfd >= 0) ::close(run.pidfd);
  TrialStatus result = TrialStatus::kTrained;
  std::string error;
  auto with_tail = [&](std::string what) {
    if (!run.err_tail.empty()) what += "; stderr: " + run.err_tail;
    return what;
  };
  if (run.interrupted) {
    result = TrialStatus::kInterrupted;
    error = "killed";
  } else if (run.timed_out) {
    result = TrialStatus::kFailed;
    error = with_tail("timed out after " + std::to_string(*impl_->options_.timeout_s()) + " s");
  } else if (WIFSIGNALED(status)) {
    result = TrialStatus::kFailed;
    error = with_tail(std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                      strsignal(WTERMSIG(status)) + ")");
  } else if (WEXITSTATUS(status) != 0) {
    result = TrialStatus::kFailed;
    error = with_tail("exit status " + std::to_string(WEXITSTATUS(status)));
  } else if (!run.protocol_error.empty()) {
    result = TrialStatus::kFailed;
    error = run.protocol_error;
  } else if (!run.final_reported) {
    result = TrialStatus::kFailed;
    error = with_tail("exited 0 without printing a line baton: {\"final\": VALUE}");
  }
  std::replace(impl_->slot_trial_.begin(), impl_->slot_trial_.end(), id,
               int64_t{-1});  // the slot is free, however it ended
  {
    std::lock_guard lock(table_mutex());
    --impl_->active_;
    impl_->kill_requests_.erase(id);
  }
  TrainingEnd end(id, result, error);
  dispatch_or_log(id, end);
}

// A listener's failure (a storage locked for longer than it waits) is the search's problem, not the
// trial's: the trial keeps the outcome its process gave, in memory, and the next write stores it.
void ProcessEngine::dispatch_or_log(int64_t id, ModelEvent& event) {
  try {
    dispatch(event);
  } catch (const std::exception& e) {
    spdlog::error("trial {}: its {} could not be recorded ({}); it is kept in memory and written with its next change",
                  id, to_string(event.type()), e.what());
  }
}

// Trials whose process has ended: their process group is stopped (a background child that keeps
// stdout open does not keep the trial running), and their pipes are closed once what was written
// is read, or after the group's grace.
void ProcessEngine::reap_exited(std::vector<int64_t>& done) {
  const double now = mono_s();
  for (auto& [id, run] : impl_->running_) {
    if (!run->exited && ::waitpid(run->pid, &run->status, WNOHANG) == run->pid) {
      run->exited = true;
      if (::kill(-run->pid, 0) == 0) {  // others of its group live on
        ::kill(-run->pid, SIGTERM);
        if (run->kill_at == 0.0) run->kill_at = now + impl_->options_.kill_grace_s();
      }
      run->close_at = now + impl_->options_.kill_grace_s() + 1.0;
    }
    if (run->exited && now >= run->close_at && (run->out >= 0 || run->err >= 0)) {
      for (int* fd : {&run->out, &run->err}) {
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
      }
      done.push_back(id);
    }
  }
}

// The monitor thread: starts queued trials as workers free up, stops the killed and the timed-out,
// reads the trials' output (the protocol lines on stdout, the tail of stderr) and ends the trials
// whose pipes closed.
void ProcessEngine::monitor() {
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const bool stopping = start_and_signal();
    if (stopping && impl_->running_.empty()) return;
    std::vector<int64_t> done;
    for (const auto& [id, is_stdout] : wait_for_output()) {
      if (read_output(id, *impl_->running_.at(id), is_stdout, buffer)) done.push_back(id);
    }
    reap_exited(done);
    std::sort(done.begin(), done.end());
    done.erase(std::unique(done.begin(), done.end()), done.end());
    for (int64_t id : done) {
      auto node = impl_->running_.extract(id);
      finish(id, *node.mapped());
    }
  }
}

bool ProcessEngine::start_and_signal() {
  std::vector<int64_t> to_start;
  std::set<int64_t> kills;
  bool stopping = false;
  {
    std::lock_guard lock(table_mutex());
    stopping = shutting_down_locked();
    while (!stopping && !queue_locked().empty() && impl_->active_ < impl_->options_.workers()) {
      to_start.push_back(queue_locked().front());
      queue_locked().pop_front();
      ++impl_->active_;
    }
    kills.swap(impl_->kill_requests_);
  }
  for (int64_t id : to_start) start(id);
  const double now = mono_s();
  for (auto& [id, run] : impl_->running_) {
    const bool kill_it = stopping || kills.count(id);
    if (kill_it && !run->interrupted && !run->timed_out) run->interrupted = true;
    if (run->deadline > 0 && now >= run->deadline && !run->interrupted && !run->timed_out) run->timed_out = true;
    if ((run->interrupted || run->timed_out) && run->kill_at == 0.0) {
      ::kill(-run->pid, SIGTERM);
      run->kill_at = now + impl_->options_.kill_grace_s();
    }
    if (run->kill_at > 0.0 && now >= run->kill_at) {
      ::kill(-run->pid, SIGKILL);
      run->kill_at = now + 3600;  // once
    }
  }
  return stopping;
}

std::vector<std::pair<int64_t, bool>> ProcessEngine::wait_for_output() {
  std::vector<pollfd> fds = {{impl_->wake_pipe_[0], POLLIN, 0}};
  std::vector<std::pair<int64_t, bool>> owners = {{-1, false}};
  double next = -1;
  for (auto& [id, run] : impl_->running_) {
    if (run->pidfd >= 0 && !run->exited) {
      fds.push_back({run->pidfd, POLLIN, 0});
      owners.push_back({-1, false});
    }
    if (!run->exited && run->pidfd < 0) next = next < 0 ? mono_s() + 0.1 : std::min(next, mono_s() + 0.1);
    if (run->exited && run->close_at > 0) next = next < 0 ? run->close_at : std::min(next, run->close_at);
    if (run->out >= 0) {
      fds.push_back({run->out, POLLIN, 0});
      owners.push_back({id, true});
    }
    if (run->err >= 0) {
      fds.push_back({run->err, POLLIN, 0});
      owners.push_back({id, false});
    }
    for (double t : {run->deadline, run->kill_at}) {
      if (t > 0 && (next < 0 || t < next)) next = t;
    }
  }
  const int timeout_ms = next < 0 ? -1 : std::max(0, static_cast<int>(std::ceil((next - mono_s()) * 1000)));
  const int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (n <= 0) return {};
  if (fds[0].revents) {
    char drain[256];
    while (::read(impl_->wake_pipe_[0], drain, sizeof drain) > 0) {
    }
  }
  std::vector<std::pair<int64_t, bool>> ready;
  for (std::size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents && owners[i].first >= 0) ready.push_back(owners[i]);
  }
  return ready;
}

bool ProcessEngine::read_output(int64_t id, Run& run, bool is_stdout, std::vector<char>& buffer) {
  int& fd = is_stdout ? run.out : run.err;
  const ssize_t got = ::read(fd, buffer.data(), buffer.size());
  if (got < 0 && errno == EINTR) return false;
  const bool eof = got <= 0;
  if (eof) {
    ::close(fd);
    fd = -1;
  }
  if (!is_stdout && !eof) {  // stderr: to its log, and its tail kept for the error
    const std::string chunk(buffer.data(), static_cast<std::size_t>(got));
    if (run.err_log.is_open()) run.err_log << chunk << std::flush;
    run.err_tail += chunk;
    if (run.err_tail.size() > kStderrTail) run.err_tail.erase(0, run.err_tail.size() - kStderrTail);
    while (!run.err_tail.empty() && (run.err_tail.back() == '\n' || run.err_tail.back() == ' '))
      run.err_tail.pop_back();
  }
  if (is_stdout) {
    if (!eof) {
      run.out_buf.append(buffer.data(), static_cast<std::size_t>(got));
    } else if (!run.out_buf.empty()) {
      run.out_buf += '\n';  // a last line without its newline
    }
    std::size_t pos = 0;
    for (std::size_t nl; (nl = run.out_buf.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      const std::string line = run.out_buf.substr(pos, nl - pos);
      if (run.out_log.is_open()) run.out_log << line << '\n' << std::flush;
      if (!run.interrupted && !run.timed_out) report(id, run, line);
    }
    run.out_buf.erase(0, pos);
  }
  return run.out < 0 && run.err < 0;
}

void ProcessEngine::report(int64_t id, Run& run, const std::string& line) {
  std::optional<nlohmann::json> j;
  try {
    j = parse_protocol_line(line);
  } catch (const std::exception& e) {
    if (run.protocol_error.empty()) run.protocol_error = std::string("trial protocol: ") + e.what();
    return;
  }
  if (!j) return;
  if (j->contains("final")) {
    const auto& v = (*j)["final"];
    FinalMetric e(id, v.is_array() ? v.front().get<double>() : v.get<double>());
    if (v.is_array() && v.size() > 1) e.values = v.get<std::vector<double>>();
    if (j->contains("constraints")) e.constraints = (*j)["constraints"].get<std::vector<double>>();
    if (j->value("paused", false)) e.paused_at = (*j)["step"].get<int64_t>();
    const std::size_t count = v.is_array() ? v.size() : 1;
    if (count != impl_->options_.objectives() || e.constraints.size() != impl_->options_.constraints()) {
      if (run.protocol_error.empty()) run.protocol_error = protocol_count_error(impl_->options_, *j);
      return;
    }
    run.final_reported = true;
    dispatch_or_log(id, e);
  } else {
    const int64_t step = j->contains("step") ? (*j)["step"].get<int64_t>() : run.auto_step;
    run.auto_step = step == std::numeric_limits<int64_t>::max() ? step : step + 1;
    IntermediateMetric e(id, (*j)["intermediate"].get<double>(), step);
    dispatch_or_log(id, e);
  }
}

int kill_worker_processes(const std::string& worker) {
  if (worker.empty()) return 0;
  const std::string wanted = "BATON_SEARCH_WORKER=" + worker;
  int killed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string variable;
    while (std::getline(in, variable, '\0')) {
      if (variable == wanted) {
        killed += ::kill(pid, SIGKILL) == 0 ? 1 : 0;
        break;
      }
    }
  }
  return killed;
}

}  // namespace baton
