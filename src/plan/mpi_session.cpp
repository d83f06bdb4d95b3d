#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/plan/mpi.h"
#include "mpi/comm.h"

namespace baton {

namespace {

constexpr int kFailTag = 7100;  // + run number % kFailTags: a run never sees an earlier run's notices
constexpr int kFailTags = 1000;

nlohmann::json error_json(const PlanError& e, int rank) {
  return {{"node", e.node()}, {"task", e.task()}, {"step", e.step()}, {"what", e.what_happened()}, {"rank", rank}};
}

PlanError error_from_json(const nlohmann::json& j) {
  return PlanError(j.at("node").get<std::string>(), j.at("task").get<std::string>(), j.at("step").get<std::string>(),
                   j.at("what").get<std::string>(), j.at("rank").get<int>());
}

// {"<combined task index>": [[value, ...] per output]} for the outputs that are ready.
nlohmann::json outputs_json(const TaskGroup& by_node, const std::vector<int>& placed, int rank) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < by_node.tasks().size(); ++i) {
    if (placed[i] != rank) continue;
    nlohmann::json per_output = nlohmann::json::array();
    for (const auto& output : by_node.tasks()[i].outputs()) {
      nlohmann::json values = nlohmann::json::array();
      if (output->ready()) {
        for (const auto& v : output->get_all()) values.push_back(value_to_json(v));
      }
      per_output.push_back(std::move(values));
    }
    out[std::to_string(i)] = std::move(per_output);
  }
  return out;
}

void set_outputs(const TaskGroup& by_node, const nlohmann::json& outputs) {
  for (const auto& [index, per_output] : outputs.items()) {
    const auto i = static_cast<std::size_t>(std::stoul(index));
    const auto& task_outputs = by_node.tasks().at(i).outputs();
    for (std::size_t k = 0; k < task_outputs.size() && k < per_output.size(); ++k) {
      if (per_output[k].empty() || task_outputs[k]->ready()) continue;
      std::vector<WorkspaceValue> values;
      for (const auto& v : per_output[k]) values.push_back(value_from_json(v));
      task_outputs[k]->set(std::move(values));
    }
  }
}

// What happened on this rank while its nodes ran.
struct RankRun {
  std::optional<PlanError> error;
  bool told = false;        // this rank told the others that a step failed here
  std::vector<bool> heard;  // the ranks whose notice was received
};

// Runs `mine` on a worker thread; this thread alone talks MPI: it tells the other ranks when a step
// here fails, and cancels the steps here when another rank tells it.
RankRun run_and_watch(LocalSession& local, const std::vector<const Task*>& mine, mpi::Comm& comm, int tag) {
  RankRun run;
  run.heard.assign(static_cast<std::size_t>(comm.size()), false);
  std::mutex done_mutex;
  std::condition_variable done_changed;
  bool done = false;
  std::thread worker([&] {
    auto e = local.run_nodes(mine);
    std::lock_guard lock(done_mutex);
    run.error = std::move(e);
    done = true;
    done_changed.notify_all();
  });
  auto tell_others = [&] {
    for (int r = 0; r < comm.size(); ++r) {
      if (r != comm.rank()) comm.send(r, tag, "failed");
    }
    run.told = true;
  };
  bool cancelled_by_other = false;
  try {
    for (;;) {
      {
        // Wakes when the nodes here are done, else every millisecond to look for notices.
        std::unique_lock lock(done_mutex);
        if (done_changed.wait_for(lock, std::chrono::milliseconds(1), [&] { return done; })) break;
      }
      if (!run.told && !cancelled_by_other && local.failing()) tell_others();
      if (cancelled_by_other) continue;
      if (auto notice = comm.poll(tag)) {
        run.heard[static_cast<std::size_t>(notice->first)] = true;
        cancelled_by_other = true;
        local.cancel("cancelled: a step failed on rank " + std::to_string(notice->first));
      }
    }
    worker.join();
    if (!run.told && !cancelled_by_other && run.error && !run.error->task().empty()) tell_others();
  } catch (...) {
    local.cancel("MPI failure");
    worker.join();
    throw;
  }
  return run;
}

// Every notice sent in this run is received before the next run can start.
void drain_notices(mpi::Comm& comm, int tag, const RankRun& run) {
  const auto told_by = comm.allgather(run.told ? 1 : 0);
  for (int r = 0; r < comm.size(); ++r) {
    if (r != comm.rank() && told_by[static_cast<std::size_t>(r)] && !run.heard[static_cast<std::size_t>(r)]) {
      comm.recv(r, tag);
    }
  }
  comm.complete_sends();
}

// Rank 0 gathers every rank's outputs and error, takes the first failed step as the cause (else any
// error) and broadcasts it; every rank throws it. With `broadcast_outputs` every rank gets every output.
void agree_on_outcome(mpi::Comm& comm, const TaskGroup& by_node, const std::vector<int>& placed,
                      std::optional<PlanError> error, const std::string& my_node, bool broadcast_outputs) {
  const int me = comm.rank();
  nlohmann::json report = {{"error", nullptr}, {"outputs", nlohmann::json::object()}};
  try {
    report["outputs"] = outputs_json(by_node, placed, me);
  } catch (const std::exception& e) {
    if (!error) error.emplace(my_node, "", "", std::string("outputs: ") + e.what());
  }
  if (error) report["error"] = error_json(*error, me);

  nlohmann::json summary = {{"error", nullptr}};
  const auto reports = comm.gather(report.dump(), 0);
  if (me == 0) {
    nlohmann::json cause, any;
    for (const auto& text : reports) {
      const auto r = nlohmann::json::parse(text);
      set_outputs(by_node, r["outputs"]);
      if (broadcast_outputs) summary["outputs"].update(r["outputs"]);
      if (r["error"].is_null()) continue;
      if (cause.is_null() && !r["error"]["task"].get<std::string>().empty()) cause = r["error"];
      if (any.is_null()) any = r["error"];
    }
    summary["error"] = cause.is_null() ? any : cause;
  }
  summary = nlohmann::json::parse(comm.broadcast(summary.dump(), 0));
  if (me != 0 && broadcast_outputs && summary.contains("outputs")) set_outputs(by_node, summary["outputs"]);
  if (!summary["error"].is_null()) throw error_from_json(summary["error"]);
}

}  // namespace

struct MpiSession::Impl {
  MpiSessionOptions options_;
  std::unique_ptr<LocalSession> local_;
  int runs_ = 0;
};

bool MpiSession::built() { return mpi::built(); }
bool MpiSession::launched() { return mpi::launched(); }

MpiSession::MpiSession(MpiSessionOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = std::move(options);
  mpi::Comm::world();  // initialises MPI, or throws when baton was built without it
  impl_->local_ = std::make_unique<LocalSession>(impl_->options_.threads() > 0 ? impl_->options_.threads()
                                                                               : mpi::cores_per_local_rank());
}

MpiSession::~MpiSession() = default;

int MpiSession::rank() const { return mpi::Comm::world().rank(); }
int MpiSession::size() const { return mpi::Comm::world().size(); }

std::shared_ptr<Workspace> MpiSession::node_workspace(const std::string& node) {
  return impl_->local_->node_workspace(node);
}

std::vector<int> MpiSession::place(const TaskGroup& by_node) const {
  const int n = size();
  std::vector<int> placed;
  for (std::size_t i = 0; i < by_node.tasks().size(); ++i) {
    const auto& node = by_node.tasks()[i].node();
    auto it = impl_->options_.node_ranks().find(node);
    if (it == impl_->options_.node_ranks().end()) {
      placed.push_back(static_cast<int>(i % static_cast<std::size_t>(n)));
    } else if (it->second < 0 || it->second >= n) {
      throw std::invalid_argument("MpiSession: node '" + node + "' is mapped to rank " + std::to_string(it->second) +
                                  ", but the job has " + std::to_string(n) + " rank(s): 0.." + std::to_string(n - 1));
    } else {
      placed.push_back(it->second);
    }
  }
  return placed;
}

int MpiSession::rank_of(TaskGroup& group, const std::string& node) const {
  const TaskGroup& by_node = group.tasks_by_node();
  const auto placed = place(by_node);
  for (std::size_t i = 0; i < by_node.tasks().size(); ++i) {
    if (by_node.tasks()[i].node() == node) return placed[i];
  }
  throw std::invalid_argument("MpiSession::rank_of: no node '" + node + "' in the group");
}

void MpiSession::run(TaskGroup& group) {
  auto& comm = mpi::Comm::world();
  const int me = comm.rank();
  const TaskGroup& by_node = group.tasks_by_node();
  const auto placed = place(by_node);
  const int tag = kFailTag + impl_->runs_++ % kFailTags;
  std::vector<const Task*> mine;
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (placed[i] == me) mine.push_back(&by_node.tasks()[i]);
  }
  try {
    RankRun run = run_and_watch(*impl_->local_, mine, comm, tag);
    drain_notices(comm, tag, run);
    agree_on_outcome(comm, by_node, placed, std::move(run.error), mine.empty() ? "" : mine.front()->node(),
                     impl_->options_.broadcast_outputs());
  } catch (const PlanError&) {
    throw;
  } catch (const std::exception& e) {
    // The ranks no longer agree on where they are in the protocol: end the job rather than hang.
    std::fprintf(stderr, "baton: MpiSession on rank %d: %s; ending the job\n", me, e.what());
    std::fflush(stderr);
    comm.abort(3);
  }
}

}  // namespace baton
