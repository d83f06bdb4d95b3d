// baton: train LibTorch models with an event engine, and run many trainings and task groups.
//
//   #include <baton/baton.h>
//
// brings in every public header of every module (each module's own headers can be included one at
// a time, as examples/ does, for shorter compiles). None of them includes <torch/torch.h>: a
// program that calls LibTorch's tensor operations includes it too.
#pragma once

#include "baton/core/algorithm.h"
#include "baton/core/batch_source.h"
#include "baton/core/callback.h"
#include "baton/core/device.h"
#include "baton/core/engine.h"
#include "baton/core/event.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/logger.h"
#include "baton/core/options.h"
#include "baton/core/passes.h"
#include "baton/core/precision.h"
#include "baton/core/profiler.h"
#include "baton/core/registry.h"
#include "baton/core/schedule.h"
#include "baton/core/state.h"
#include "baton/core/state_dict.h"
#include "baton/core/task.h"
#include "baton/core/time.h"
#include "baton/core/trace.h"

#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/url.h"
#include "baton/io/write.h"

#include "baton/data/dataloader.h"
#include "baton/data/dataset.h"
#include "baton/data/fashion_mnist.h"
#include "baton/data/image_folder.h"
#include "baton/data/images.h"
#include "baton/data/readers.h"
#include "baton/data/text.h"
#include "baton/data/tokenizer.h"
#include "baton/data/tokens.h"
#include "baton/data/webdataset.h"

#include "baton/models/export.h"
#include "baton/models/loss.h"
#include "baton/models/model.h"
#include "baton/models/safetensors.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"

#include "baton/optim/capturable_step.h"
#include "baton/optim/optimizers.h"
#include "baton/optim/scheduler.h"

#include "baton/metrics/metrics.h"

#include "baton/algorithms/algorithms.h"
#include "baton/algorithms/augment.h"
#include "baton/algorithms/registry.h"
#include "baton/algorithms/surgery.h"
#include "baton/algorithms/weights.h"

#include "baton/callbacks/monitors.h"
#include "baton/callbacks/registry.h"
#include "baton/callbacks/stoppers.h"
#include "baton/callbacks/trace_profiler.h"

#include "baton/loggers/csv_logger.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/loggers/jsonl_logger.h"
#include "baton/loggers/plot.h"
#include "baton/loggers/progress_bar.h"
#include "baton/loggers/registry.h"
#include "baton/loggers/table_files.h"
#include "baton/loggers/tensorboard_logger.h"

#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_error.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/ranks.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"
#include "baton/train/threads.h"
#include "baton/train/trainer.h"

#include "baton/plan/mpi.h"
#include "baton/plan/session.h"
#include "baton/plan/task.h"
#include "baton/plan/workspace.h"

#include "baton/exec/distributed.h"
#include "baton/exec/engine.h"
#include "baton/exec/experiment.h"
#include "baton/exec/gp.h"
#include "baton/exec/middleware.h"
#include "baton/exec/model_strategy.h"
#include "baton/exec/process.h"
#include "baton/exec/registry.h"
#include "baton/exec/search.h"
#include "baton/exec/space.h"
#include "baton/exec/storage.h"
#include "baton/exec/strategy.h"
#include "baton/exec/tpe.h"
#include "baton/exec/trial.h"

#include "baton/dashboard/dashboard.h"
#include "baton/version.h"
