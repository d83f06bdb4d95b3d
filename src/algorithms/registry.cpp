#include "baton/algorithms/registry.h"

#include <functional>
#include <map>
#include <set>

#include "baton/algorithms/algorithms.h"
#include "baton/core/registry.h"

namespace baton {
namespace {

void read_mix(OptionReader& o, MixOptions& m) {
  o.read("alpha", m.alpha());
  o.read("interpolate_loss", m.interpolate_loss());
}

// One entry per algorithm: the options it reads from a recipe (named as in docs/algorithms.md) into
// its options struct, whose fields hold the defaults. Long by nature: a table; each entry reads on its own.
const ConfiguredRegistry<Algorithm>& algorithm_registry() {
  using R = OptionReader;
  static const ConfiguredRegistry<Algorithm> table(
      "algorithm", ConfiguredRegistry<Algorithm>::Order::kSorted,
      {
          {"label_smoothing",
           [](R& o) {
             LabelSmoothingOptions s;
             o.read("smoothing", s.smoothing());
             return std::make_shared<LabelSmoothing>(s);
           }},
          {"mixup",
           [](R& o) {
             MixOptions m;
             read_mix(o, m);
             return std::make_shared<MixUp>(m);
           }},
          {"cutmix",
           [](R& o) {
             MixOptions m;
             m.alpha(1.0);  // CutMix's own default, as Composer's
             read_mix(o, m);
             o.read("uniform_sampling", m.uniform_sampling());
             return std::make_shared<CutMix>(m);
           }},
          {"cutout",
           [](R& o) {
             CutOutOptions c;
             o.read("num_holes", c.num_holes());
             o.read("length", c.length());
             o.read("uniform_sampling", c.uniform_sampling());
             return std::make_shared<CutOut>(c);
           }},
          {"colout",
           [](R& o) {
             ColOutOptions c;
             o.read("p_row", c.p_row());
             o.read("p_col", c.p_col());
             return std::make_shared<ColOut>(c);
           }},
          {"randaugment",
           [](R& o) {
             RandAugmentOptions r;
             o.read("severity", r.severity());
             o.read("depth", r.depth());
             o.read("augmentation_set", r.augmentation_set());
             return std::make_shared<RandAugment>(r);
           }},
          {"progressive_resizing",
           [](R& o) {
             ProgressiveResizingOptions p;
             o.read("mode", p.mode());
             o.read("initial_scale", p.initial_scale());
             o.read("finetune_fraction", p.finetune_fraction());
             o.read("delay_fraction", p.delay_fraction());
             o.read("size_increment", p.size_increment());
             return std::make_shared<ProgressiveResizing>(p);
           }},
          {"layer_freezing",
           [](R& o) {
             LayerFreezingOptions f;
             o.read("freeze_start", f.freeze_start());
             o.read("freeze_level", f.freeze_level());
             o.read("freeze_interval", f.freeze_interval());
             return std::make_shared<LayerFreezing>(f);
           }},
          {"ema",
           [](R& o) {
             EmaOptions e;
             o.read("half_life", e.half_life());
             o.read("smoothing", e.smoothing());
             o.read("update_interval", e.update_interval());
             o.read("ema_start", e.ema_start());
             return std::make_shared<Ema>(e);
           }},
          {"swa",
           [](R& o) {
             SwaOptions s;
             o.read("swa_start", s.swa_start());
             o.read("swa_end", s.swa_end());
             o.read("update_interval", s.update_interval());
             o.read("schedule_swa_lr", s.schedule_swa_lr());
             o.read("swa_lr", s.swa_lr());
             o.read("anneal_steps", s.anneal_steps());
             o.read("anneal_strategy", s.anneal_strategy());
             return std::make_shared<Swa>(s);
           }},
          {"gradient_clipping",
           [](R& o) {
             GradientClippingOptions g;
             o.read("clipping_type", g.clipping_type());
             o.read("clipping_threshold", g.clipping_threshold());
             return std::make_shared<GradientClipping>(g);
           }},
          {"sam",
           [](R& o) {
             SamOptions s;
             o.read("rho", s.rho());
             o.read("epsilon", s.epsilon());
             o.read("interval", s.interval());
             return std::make_shared<Sam>(s);
           }},
          {"selective_backprop",
           [](R& o) {
             SelectiveBackpropOptions s;
             o.read("start", s.start());
             o.read("end", s.end());
             o.read("keep", s.keep());
             o.read("scale_factor", s.scale_factor());
             o.read("interval", s.interval());
             o.read("method", s.method());
             return std::make_shared<SelectiveBackprop>(s);
           }},
          {"channels_last", [](R&) { return std::make_shared<ChannelsLast>(); }},
          {"blurpool",
           [](R& o) {
             BlurPoolOptions b;
             o.read("replace_convs", b.replace_convs());
             o.read("replace_maxpools", b.replace_maxpools());
             o.read("blur_first", b.blur_first());
             o.read("min_channels", b.min_channels());
             return std::make_shared<BlurPool>(b);
           }},
          {"squeeze_excite",
           [](R& o) {
             SqueezeExciteOptions s;
             o.read("latent_channels", s.latent_channels());
             o.read("min_channels", s.min_channels());
             return std::make_shared<SqueezeExcite>(s);
           }},
          {"stochastic_depth",
           [](R& o) {
             StochasticDepthOptions s;
             o.read("drop_rate", s.drop_rate());
             o.read("drop_distribution", s.drop_distribution());
             return std::make_shared<StochasticDepth>(s);
           }},
          {"ghost_batchnorm",
           [](R& o) {
             GhostBatchNormOptions g;
             o.read("ghost_batch_size", g.ghost_batch_size());
             return std::make_shared<GhostBatchNorm>(g);
           }},
          {"single_path",
           [](R& o) {
             SinglePathOptions s;
             o.read("sampling", s.sampling());
             o.read("seed", s.seed());
             return std::make_shared<SinglePath>(s);
           }},
          {"lora",
           [](R& o) {
             LoraOptions l;
             o.read("r", l.r());
             o.read("alpha", l.alpha());
             o.read("dropout", l.dropout());
             o.read("targets", l.targets());
             o.read("rslora", l.rslora());
             o.read("checkpoint_base", l.checkpoint_base());
             if (o.has("init") && o.json()["init"].is_object()) {
               OptionReader init = o.read_child("init");
               init.check_keys({"from"});
               init.read("from", l.init_from());
               if (l.init_from().empty()) init.fail("from", "expected a PEFT adapter's folder");
             } else {
               o.read("init", l.init());
             }
             return std::make_shared<Lora>(l);
           }},
          {"low_precision_groupnorm", [](R&) { return std::make_shared<LowPrecisionGroupNorm>(); }},
          {"low_precision_layernorm", [](R&) { return std::make_shared<LowPrecisionLayerNorm>(); }},
      });
  return table;
}

}  // namespace

std::shared_ptr<Algorithm> make_algorithm(const std::string& name, OptionReader& options) {
  std::shared_ptr<Algorithm> algorithm = make_configured(algorithm_registry(), name, options);
  const nlohmann::json& json = options.json();
  algorithm->set_recipe_spec({{"name", name}, {"options", json.is_null() ? nlohmann::json::object() : json}});
  return algorithm;
}

std::shared_ptr<Algorithm> make_algorithm(const std::string& name, const nlohmann::json& options) {
  OptionReader reader(name, options);
  return make_algorithm(name, reader);
}

std::vector<std::string> algorithm_names() { return algorithm_registry().names(); }

}  // namespace baton
