// ConsoleLogger lives with ProgressBar: see progress_bar.h.
#pragma once

#include "baton/loggers/progress_bar.h"
