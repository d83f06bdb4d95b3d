// baton checkpoint inspect FILE [--json]; baton checkpoint consolidate CHECKPOINT --out FILE
#include <cstdio>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/core/time.h"
#include "baton/train/checkpoint.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct InspectArgs {
  std::string file;
  bool json = false;
};

void run_inspect(const InspectArgs& args) {
  const CheckpointFile ckpt = read_checkpoint(args.file);
  nlohmann::json out = {{"file", args.file}, {"weights_sha256", weights_sha256(ckpt.state)}};
  out["baton_version"] = ckpt.meta.value("baton_version", "");
  out["run_name"] = ckpt.meta.value("run_name", ckpt.state.values.value("run_name", ""));
  out["timestamp"] = ckpt.state.values.value("timestamp", nlohmann::json::object());
  out["metrics"] = ckpt.state.values.value("eval_metrics", nlohmann::json::object());
  out["recipe"] = ckpt.meta.value("recipe", "");
  if (ckpt.meta.contains("classes")) out["classes"] = ckpt.meta["classes"];  // an image folder's class names
  if (ckpt.meta.contains("monitor")) out["monitor"] = ckpt.meta["monitor"];  // save_top_k's ranking value
  int64_t bytes = 0;
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : ckpt.tensors) {
    tensors.push_back({{"name", t["name"]}, {"dtype", t["dtype"]}, {"shape", t["shape"]}, {"nbytes", t["nbytes"]}});
    bytes += t["nbytes"].get<int64_t>();
  }
  out["tensors"] = tensors;
  out["tensor_bytes"] = bytes;
  if (args.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  Timestamp ts;
  if (out["timestamp"].contains("batch")) ts.load_state_dict(out["timestamp"]);
  std::printf("checkpoint %s\n  run %s, baton %s, at %s\n  weights_sha256 %s\n", args.file.c_str(),
              out["run_name"].get<std::string>().c_str(), out["baton_version"].get<std::string>().c_str(),
              ts.to_string().c_str(), out["weights_sha256"].get<std::string>().c_str());
  for (const auto& [label, metrics] : out["metrics"].items()) {
    for (const auto& [name, value] : metrics.items())
      std::printf("  %s/%s %.4f\n", label.c_str(), name.c_str(), value.get<double>());
  }
  if (out.contains("monitor")) {
    std::printf("  ranked by %s = %.6g (save_top_k)\n", out["monitor"].value("key", "").c_str(),
                out["monitor"].value("value", 0.0));
  }
  if (out.contains("classes")) {
    std::string names;
    for (const auto& c : out["classes"]) names += (names.empty() ? "" : ", ") + c.get<std::string>();
    std::printf("  %zu classes: %s\n", out["classes"].size(), names.substr(0, 200).c_str());
  }
  std::printf("  %zu tensors, %lld bytes:\n", tensors.size(), static_cast<long long>(bytes));
  for (const auto& t : tensors) {
    std::printf("    %-48s %-8s %s\n", t["name"].get<std::string>().c_str(), t["dtype"].get<std::string>().c_str(),
                t["shape"].dump().c_str());
  }
}

struct ConsolidateArgs {
  std::string from;
  std::string out;
};

void run_consolidate(const ConsolidateArgs& args) {
  const std::string source = consolidate_checkpoint(args.from, args.out);
  std::printf("%s: one file of %s\n", args.out.c_str(), source.c_str());
}

}  // namespace

void add_checkpoint(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "look inside checkpoints");
  cmd->require_subcommand(1);
  auto args = std::make_shared<InspectArgs>();
  CLI::App* inspect = cmd->add_subcommand("inspect", "what a checkpoint holds, and its weights' SHA-256");
  inspect->add_option("file", args->file, "checkpoint file")->required();
  inspect->add_flag("--json", args->json, "print JSON");
  inspect->callback([args] { run_inspect(*args); });
  auto joined = std::make_shared<ConsolidateArgs>();
  CLI::App* consolidate = cmd->add_subcommand(
      "consolidate",
      "one file from a checkpoint (save_format: sharded: the ranks' files of the optimizer state joined)");
  consolidate->add_option("checkpoint", joined->from, "a checkpoint, or a checkpoint folder (its latest)")->required();
  consolidate->add_option("--out", joined->out, "the file to write (a new one)")->required();
  consolidate->callback([joined] { run_consolidate(*joined); });
}

}  // namespace baton::cli
