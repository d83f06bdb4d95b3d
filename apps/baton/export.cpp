// baton export CHECKPOINT --torchscript OUT.pt [--device DEVICE] [--recipe RECIPE.yaml [--set key=value]...]
// (the library call: export_model, include/baton/runs/model_commands.h)
#include <cstdio>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/runs/model_commands.h"
#include "baton/train/recipe.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct ExportArgs {
  ExportRequest request;
  std::string torchscript;  // --torchscript FILE: --format torchscript --out FILE
};

void run_export(ExportArgs args) {
  ExportRequest& request = args.request;
  if (args.torchscript.empty() == request.out.empty()) {
    throw RecipeError(
        "give --out FILE (with --format torchscript or safetensors; a folder with --format hf) or --torchscript FILE, "
        "one of them");
  }
  if (!args.torchscript.empty()) {
    if (request.format != "torchscript")
      throw RecipeError("--torchscript writes TorchScript; with --format, use --out");
    request.out = args.torchscript;
    request.out_flag = "--torchscript";
  }
  const Exported exported = export_model(request);
  if (request.format == "safetensors") {
    std::printf("exported %s to %s (safetensors, %zu tensors)\n", request.checkpoint.c_str(), request.out.c_str(),
                exported.tensors);
    return;
  }
  if (request.format == "hf") {
    std::printf("exported %s to %s (a Hugging Face folder: config.json, model.safetensors of %zu tensors%s)\n",
                request.checkpoint.c_str(), request.out.c_str(), exported.tensors,
                request.merge_lora ? "; LoRA adapters merged" : "");
    return;
  }
  if (request.format == "peft") {
    std::printf("exported %s to %s (a PEFT adapter: adapter_config.json, adapter_model.safetensors of %zu tensors)\n",
                request.checkpoint.c_str(), request.out.c_str(), exported.tensors);
    return;
  }
  std::printf("exported %s to %s (TorchScript, %zu bytes, input [N, %s)\n", request.checkpoint.c_str(),
              request.out.c_str(), exported.bytes, c10::str(at::IntArrayRef(exported.input_shape)).substr(1).c_str());
}

}  // namespace

void add_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  ExportRequest& request = args->request;
  CLI::App* cmd = app.add_subcommand(
      "export", "the trained model as TorchScript (torch.jit.load in Python or C++) or its weights as safetensors");
  cmd->add_option("checkpoint", request.checkpoint, "a checkpoint (or model.pt with --recipe)")->required();
  cmd->add_option("--torchscript", args->torchscript, "the TorchScript file to write (--format torchscript --out)");
  cmd->add_option("--format", request.format,
                  "torchscript (the traced model), safetensors (the weights), hf (a Hugging Face model's folder, "
                  "what from_pretrained loads) or peft (a LoRA run's adapters, what PeftModel.from_pretrained loads)")
      ->check(CLI::IsMember({"torchscript", "safetensors", "hf", "peft"}))
      ->capture_default_str();
  cmd->add_option("--out", request.out, "the file to write (--format hf or peft: the folder)");
  cmd->add_flag("--merge-lora", request.merge_lora,
                "fold a LoRA run's adapters into the weights first (with --format hf: a plain model)");
  cmd->add_option("--recipe", request.recipe, "build the model from this recipe instead of the checkpoint's");
  cmd->add_option("--set", request.sets, "override a recipe key (with --recipe): key.path=value (repeatable)");
  cmd->add_option("--device", request.device,
                  "where the exported module's tensors live: cpu (default), cuda or cuda:N");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace baton::cli
