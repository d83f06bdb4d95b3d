// The algorithm library: training methods as Algorithms (Composer's, for CPU training of image
// classifiers). Each is constructible by name from a recipe (make_algorithm, registry.h) and
// documented in docs/algorithms.md (what it does, its events, its options and their defaults). A
// header per source file: augment.h (targets and inputs), weights.h (weights and gradients),
// surgery.h (model surgery and layout); this one includes the three.
//
//   TrainerOptions().algorithms({std::make_shared<baton::LabelSmoothing>(LabelSmoothingOptions().smoothing(0.1)),
//                                std::make_shared<baton::Ema>(EmaOptions().half_life(Time::parse("50ba")))});
//
// Randomness comes from LibTorch's default generator (seeded by the recipe, saved in checkpoints),
// so a seeded run is reproducible and resumes exactly.
#pragma once

#include "baton/algorithms/augment.h"
#include "baton/algorithms/lora.h"
#include "baton/algorithms/one_shot.h"
#include "baton/algorithms/surgery.h"
#include "baton/algorithms/weights.h"
