// Durable trial storage: every change to a trial is written as it happens, so a search killed at
// any moment resumes from it (`baton search --resume`) and `baton trials ls` reads it live.
//
// It is also the work queue of a distributed search: processes on one or several machines create
// trials in it, claim waiting ones in a transaction (no trial is run twice), renew a heartbeat
// while they run them, and requeue the trials of a worker that stopped beating.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/exec/trial.h"

namespace baton::sql {
class Connection;
}

namespace baton {

struct HeartbeatResult {
  std::vector<int64_t> lost{};        // requeued and claimed by another worker: stop running them
  std::vector<int64_t> reattached{};  // requeued but unclaimed: taken back by this worker
};

struct TrialState {  // a trial's place in the queue, without its body
  int64_t id = 0;
  TrialStatus status = TrialStatus::kWaiting;
  std::string worker{};
};

class TrialStorage {
 public:
  virtual ~TrialStorage() = default;
  // Insert or replace, atomically (the trial's worker and heartbeat are kept).
  virtual void save_trial(const Trial& trial) = 0;
  virtual std::vector<Trial> load_trials() = 0;  // by id; status and worker as the queue sees them
  virtual std::optional<Trial> load_trial(int64_t id) = 0;
  virtual std::vector<TrialState> states() = 0;  // by id; cheap: no trial bodies
  virtual void set_meta(const std::string& key, const nlohmann::json& value) = 0;
  virtual std::optional<nlohmann::json> meta(const std::string& key) = 0;

  // ---- the shared work queue ----
  // A new Waiting trial with the next free id, unless `limit` trials exist already (nullopt then).
  // With a `worker`, the trial is that worker's from the start (not claimable by others).
  virtual std::optional<int64_t> create_trial(const nlohmann::json& parameters, int64_t limit,
                                              const std::string& worker = {}) = 0;
  // The oldest unowned Waiting or Retrying trial becomes `worker`'s (Running in the queue, heartbeat
  // now); returned as it was, so that the worker's TrainingStart event does the rest.
  virtual std::optional<Trial> claim_trial(const std::string& worker) = 0;
  // Writes the trial only while `worker` owns it (or takes back an unclaimed requeued one); false
  // when another worker has it now.
  virtual bool save_owned(const Trial& trial, const std::string& worker) = 0;
  // Renews `worker`'s heartbeat on these trials.
  virtual HeartbeatResult heartbeat(const std::string& worker, const std::vector<int64_t>& ids) = 0;
  // Owned, unfinished trials whose heartbeat is older than `stale_after_s` by the database's clock,
  // or whose worker `is_dead` says is gone, go back to Waiting, unowned, with the reason in their
  // error. Returns them as they were (with the worker that lost them).
  virtual std::vector<Trial> requeue_stale(double stale_after_s,
                                           const std::function<bool(const std::string&)>& is_dead = {}) = 0;
  // `worker` gives a trial back to the queue (after a failure that will be retried, or a claim
  // it could not start): claimable again, as Retrying or Waiting.
  virtual bool release(int64_t id, const std::string& worker) = 0;
  // Ends an unclaimed Waiting/Retrying trial (a kill before it ran); false when a worker has it.
  virtual bool end_unclaimed(const Trial& trial) = 0;
};

// SQLite and PostgreSQL share one implementation over a small connection interface.
class SqlStorage : public TrialStorage {
 public:
  explicit SqlStorage(std::unique_ptr<sql::Connection> connection);
  ~SqlStorage() override;
  SqlStorage(const SqlStorage&) = delete;
  SqlStorage& operator=(const SqlStorage&) = delete;
  void save_trial(const Trial& trial) override;
  std::vector<Trial> load_trials() override;
  std::optional<Trial> load_trial(int64_t id) override;
  std::vector<TrialState> states() override;
  void set_meta(const std::string& key, const nlohmann::json& value) override;
  std::optional<nlohmann::json> meta(const std::string& key) override;
  std::optional<int64_t> create_trial(const nlohmann::json& parameters, int64_t limit,
                                      const std::string& worker = {}) override;
  std::optional<Trial> claim_trial(const std::string& worker) override;
  bool save_owned(const Trial& trial, const std::string& worker) override;
  HeartbeatResult heartbeat(const std::string& worker, const std::vector<int64_t>& ids) override;
  std::vector<Trial> requeue_stale(double stale_after_s,
                                   const std::function<bool(const std::string&)>& is_dead = {}) override;
  bool release(int64_t id, const std::string& worker) override;
  bool end_unclaimed(const Trial& trial) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SQLite in WAL mode with a busy timeout: several processes can write one file without
// "database is locked". The file and its folder are created when missing.
class SqliteStorage : public SqlStorage {
 public:
  explicit SqliteStorage(const std::string& path);
};

// A PostgreSQL database (libpq connection URL): for workers on several machines.
class PostgresStorage : public SqlStorage {
 public:
  explicit PostgresStorage(const std::string& url);
};

// "sqlite:///abs/path.db", "sqlite:relative.db", a plain path ending in .db/.sqlite, or
// "postgresql://[user[:password]@]host[:port]/database". Unknown schemes: std::invalid_argument
// naming the accepted forms. A storage that cannot be opened: std::runtime_error saying why.
std::unique_ptr<TrialStorage> open_storage(const std::string& url);
// The URL forms open_storage takes, from its registry of storages (for help and errors).
std::string storage_forms();

// The file of a SQLite storage's URL (as open_storage reads it); "" for another storage.
std::string storage_file(const std::string& url);

// The storage URL as it may be shown or logged: a password in it (postgresql://user:PW@host/db,
// ?password=PW, password=PW) becomes ***.
std::string redact_storage_url(const std::string& url);

}  // namespace baton
