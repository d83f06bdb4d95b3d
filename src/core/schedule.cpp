#include "baton/core/schedule.h"

#include <stdexcept>

namespace baton {

double ScheduleClock::to_batches(const Time& t) const {
  switch (t.unit()) {
    case TimeUnit::kBatch: return t.value();
    case TimeUnit::kEpoch: return t.value() * static_cast<double>(batches_per_epoch);
    case TimeUnit::kSample:
      if (batch_size <= 0)
        throw std::invalid_argument("cannot convert " + t.to_string() + " to batches: no batch size");
      return t.value() / static_cast<double>(batch_size);
    case TimeUnit::kToken:
      if (batch_size <= 0 || tokens_per_sample <= 0)
        throw std::invalid_argument("cannot convert " + t.to_string() + " to batches: the data does not count tokens");
      return t.value() / static_cast<double>(batch_size * tokens_per_sample);
    case TimeUnit::kDuration:
      if (!(max_batches > 0)) {
        throw std::invalid_argument("cannot convert " + t.to_string() +
                                    " to batches: max_duration is a wall-clock time; use ep, ba, sp or tok");
      }
      return t.value() * max_batches;
    default: break;
  }
  throw std::invalid_argument("a schedule cannot use " + t.to_string() + ": use ep, ba, sp, tok or dur");
}

}  // namespace baton
