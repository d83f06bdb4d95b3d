// baton: train LibTorch models with an event engine, and run many trainings and task groups.
//
//   #include <baton/baton.h>
//
// brings in every core header: enough to write an algorithm, a callback or a logger. The modules
// above core are included a header at a time (<baton/train/trainer.h>, <baton/data/dataloader.h>,
// <baton/models/zoo.h>, ...), as examples/ does.
#pragma once

#include "baton/core/algorithm.h"
#include "baton/core/callback.h"
#include "baton/core/device.h"
#include "baton/core/engine.h"
#include "baton/core/event.h"
#include "baton/core/logger.h"
#include "baton/core/passes.h"
#include "baton/core/precision.h"
#include "baton/core/profiler.h"
#include "baton/core/state.h"
#include "baton/core/state_dict.h"
#include "baton/core/time.h"
#include "baton/core/trace.h"
#include "baton/version.h"
