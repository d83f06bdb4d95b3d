// Durable trial storage: every change to a trial is written as it happens, so a search killed at
// any moment resumes from it (`baton search --resume`) and `baton trials ls` reads it live.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/exec/trial.h"

namespace baton {

class TrialStorage {
 public:
  virtual ~TrialStorage() = default;
  virtual void save_trial(const Trial& trial) = 0;  // insert or replace, atomically
  virtual std::vector<Trial> load_trials() = 0;      // by id
  virtual void set_meta(const std::string& key, const nlohmann::json& value) = 0;
  virtual std::optional<nlohmann::json> meta(const std::string& key) = 0;
};

// SQLite in WAL mode with a busy timeout: several processes can write one file without
// "database is locked". The file and its folder are created when missing.
class SqliteStorage : public TrialStorage {
 public:
  explicit SqliteStorage(const std::string& path);
  ~SqliteStorage() override;
  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;
  void save_trial(const Trial& trial) override;
  std::vector<Trial> load_trials() override;
  void set_meta(const std::string& key, const nlohmann::json& value) override;
  std::optional<nlohmann::json> meta(const std::string& key) override;

 private:
  void exec(const std::string& sql);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "sqlite:///abs/path.db", "sqlite:relative.db" or a plain path ending in .db/.sqlite.
// Unknown schemes: std::invalid_argument naming the accepted forms.
std::unique_ptr<TrialStorage> open_storage(const std::string& url);

}  // namespace baton
