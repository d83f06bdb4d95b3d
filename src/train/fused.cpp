#include "baton/train/fused.h"

#include <algorithm>

namespace baton {

FusedData::Sets FusedData::sets(const std::string& key, const std::function<Sets()>& load) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = sets_.find(key); it != sets_.end()) return it->second;
  Sets loaded = load();
  loaded.batches = std::make_shared<SharedBatches>(max_held_);
  sets_.emplace(key, loaded);
  return loaded;
}

SharedBatches::Stats FusedData::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SharedBatches::Stats out;
  for (const auto& [key, sets] : sets_) {
    const SharedBatches::Stats s = sets.batches->stats();
    out.made += s.made;
    out.taken += s.taken;
    out.make_seconds += s.make_seconds;
    out.most_held = std::max(out.most_held, s.most_held);
    out.waits += s.waits;
  }
  return out;
}

}  // namespace baton
