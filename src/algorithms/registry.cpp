#include "baton/algorithms/registry.h"

#include <functional>
#include <map>
#include <set>

#include "baton/algorithms/algorithms.h"
#include "baton/core/options.h"

namespace baton {
namespace {

MixOptions mix_options(OptionReader& o, double alpha) {
  MixOptions m;
  m.alpha = o.number("alpha", alpha);
  m.interpolate_loss = o.boolean("interpolate_loss", false);
  return m;
}

const Factories<Algorithm>& algorithm_factories() {
  static const Factories<Algorithm> table = {
      {"label_smoothing",
       [](OptionReader& o) {
         return std::make_shared<LabelSmoothing>(LabelSmoothingOptions{o.number("smoothing", 0.1)});
       }},
      {"mixup", [](OptionReader& o) { return std::make_shared<MixUp>(mix_options(o, 0.2)); }},
      {"cutmix",
       [](OptionReader& o) {
         MixOptions m = mix_options(o, 1.0);
         m.uniform_sampling = o.boolean("uniform_sampling", false);
         return std::make_shared<CutMix>(m);
       }},
      {"cutout",
       [](OptionReader& o) {
         return std::make_shared<CutOut>(
             CutOutOptions{o.integer("num_holes", 1), o.number("length", 0.5), o.boolean("uniform_sampling", false)});
       }},
      {"colout",
       [](OptionReader& o) {
         return std::make_shared<ColOut>(ColOutOptions{o.number("p_row", 0.15), o.number("p_col", 0.15)});
       }},
      {"randaugment",
       [](OptionReader& o) {
         return std::make_shared<RandAugment>(
             RandAugmentOptions{o.integer("severity", 9), o.integer("depth", 2), o.text("augmentation_set", "all")});
       }},
      {"progressive_resizing",
       [](OptionReader& o) {
         return std::make_shared<ProgressiveResizing>(ProgressiveResizingOptions{
             o.text("mode", "resize"), o.number("initial_scale", 0.5), o.number("finetune_fraction", 0.2),
             o.number("delay_fraction", 0.5), o.integer("size_increment", 4)});
       }},
      {"layer_freezing",
       [](OptionReader& o) {
         LayerFreezingOptions f;
         f.freeze_start = o.number("freeze_start", f.freeze_start);
         f.freeze_level = o.number("freeze_level", f.freeze_level);
         f.freeze_interval = o.time("freeze_interval", f.freeze_interval);
         return std::make_shared<LayerFreezing>(f);
       }},
      {"ema",
       [](OptionReader& o) {
         EmaOptions e;
         e.half_life = o.time("half_life", e.half_life);
         e.smoothing = o.optional_number("smoothing");
         e.update_interval = o.time("update_interval", e.update_interval);
         e.ema_start = o.time("ema_start", e.ema_start);
         return std::make_shared<Ema>(e);
       }},
      {"swa",
       [](OptionReader& o) {
         SwaOptions s;
         s.swa_start = o.time("swa_start", s.swa_start);
         s.swa_end = o.time("swa_end", s.swa_end);
         s.update_interval = o.time("update_interval", s.update_interval);
         s.schedule_swa_lr = o.boolean("schedule_swa_lr", s.schedule_swa_lr);
         s.swa_lr = o.number("swa_lr", s.swa_lr);
         s.anneal_steps = o.integer("anneal_steps", s.anneal_steps);
         s.anneal_strategy = o.text("anneal_strategy", s.anneal_strategy);
         return std::make_shared<Swa>(s);
       }},
      {"gradient_clipping",
       [](OptionReader& o) {
         return std::make_shared<GradientClipping>(
             GradientClippingOptions{o.text("clipping_type", "norm"), o.number("clipping_threshold", 1.0)});
       }},
      {"sam",
       [](OptionReader& o) {
         return std::make_shared<Sam>(
             SamOptions{o.number("rho", 0.05), o.number("epsilon", 1e-12), o.integer("interval", 1)});
       }},
      {"selective_backprop",
       [](OptionReader& o) {
         SelectiveBackpropOptions s;
         s.start = o.number("start", s.start);
         s.end = o.number("end", s.end);
         s.keep = o.number("keep", s.keep);
         s.scale_factor = o.number("scale_factor", s.scale_factor);
         s.interval = o.integer("interval", s.interval);
         s.method = o.text("method", s.method);
         return std::make_shared<SelectiveBackprop>(s);
       }},
      {"channels_last", [](OptionReader&) { return std::make_shared<ChannelsLast>(); }},
      {"blurpool",
       [](OptionReader& o) {
         return std::make_shared<BlurPool>(
             BlurPoolOptions{o.boolean("replace_convs", true), o.boolean("replace_maxpools", true),
                             o.boolean("blur_first", true), o.integer("min_channels", 16)});
       }},
      {"squeeze_excite",
       [](OptionReader& o) {
         return std::make_shared<SqueezeExcite>(
             SqueezeExciteOptions{o.number("latent_channels", 64), o.integer("min_channels", 128)});
       }},
      {"stochastic_depth",
       [](OptionReader& o) {
         return std::make_shared<StochasticDepth>(
             StochasticDepthOptions{o.number("drop_rate", 0.2), o.text("drop_distribution", "linear")});
       }},
      {"ghost_batchnorm",
       [](OptionReader& o) {
         return std::make_shared<GhostBatchNorm>(GhostBatchNormOptions{o.integer("ghost_batch_size", 32)});
       }},
      {"low_precision_groupnorm", [](OptionReader&) { return std::make_shared<LowPrecisionGroupNorm>(); }},
      {"low_precision_layernorm", [](OptionReader&) { return std::make_shared<LowPrecisionLayerNorm>(); }},
  };
  return table;
}

}  // namespace

std::shared_ptr<Algorithm> make_algorithm(const std::string& name, const nlohmann::json& options) {
  std::shared_ptr<Algorithm> algorithm = build_named(algorithm_factories(), "algorithm", name, options);
  algorithm->set_recipe_spec({{"name", name}, {"options", options.is_null() ? nlohmann::json::object() : options}});
  return algorithm;
}

std::vector<std::string> algorithm_names() { return names_of(algorithm_factories()); }

}  // namespace baton
