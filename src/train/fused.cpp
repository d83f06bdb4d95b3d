#include "baton/train/fused.h"

#include <algorithm>
#include <memory>

namespace baton {

struct FusedData::Impl {
  int64_t max_held_bytes_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, Sets> sets_;
  std::mutex setup_mutex_;
};

FusedData::~FusedData() = default;

FusedData::FusedData(int64_t max_held_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->max_held_bytes_ = max_held_bytes;
}
std::mutex& FusedData::setup_mutex() { return impl_->setup_mutex_; }

FusedData::Sets FusedData::sets(const std::string& key, const std::function<Sets()>& load) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  if (const auto it = impl_->sets_.find(key); it != impl_->sets_.end()) return it->second;
  Sets loaded = load();
  loaded.streams.train = std::make_shared<SharedBatches>(impl_->max_held_bytes_);
  auto eval_stream = [&] {
    return std::make_shared<SharedBatches>(impl_->max_held_bytes_, SharedBatches::Kind::kEvaluation);
  };
  if (loaded.eval) loaded.streams.eval = eval_stream();
  for (std::size_t i = 0; i < loaded.named_evals.size(); ++i) loaded.streams.named_evals.push_back(eval_stream());
  impl_->sets_.emplace(key, loaded);
  return loaded;
}

namespace {

void add(SharedBatches::Stats& out, const std::shared_ptr<SharedBatches>& stream) {
  if (!stream) return;
  const SharedBatches::Stats s = stream->stats();
  out.made += s.made;
  out.taken += s.taken;
  out.make_seconds += s.make_seconds;
  out.most_held = std::max(out.most_held, s.most_held);
  out.most_held_bytes = std::max(out.most_held_bytes, s.most_held_bytes);
  out.waits += s.waits;
  out.made_alone += s.made_alone;
}

}  // namespace

SharedBatches::Stats FusedData::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  SharedBatches::Stats out;
  for (const auto& [key, sets] : impl_->sets_) add(out, sets.streams.train);
  return out;
}

SharedBatches::Stats FusedData::eval_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  SharedBatches::Stats out;
  for (const auto& [key, sets] : impl_->sets_) {
    add(out, sets.streams.eval);
    for (const auto& stream : sets.streams.named_evals) add(out, stream);
  }
  return out;
}

}  // namespace baton
