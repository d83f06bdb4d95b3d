#include "train/data_parallel.h"

#include "baton/train/ranks.h"
#include "baton/train/trainer.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "cuda/cuda.h"
#include "mpi/comm.h"

namespace baton::detail {

// The hooks outlive a rebuild of the buckets: they call back only while `owner` is set.
struct DataParallel::Hooks {
  DataParallel* owner = nullptr;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // kept so backward uses these
};

DataParallel::DataParallel(int64_t bucket_bytes, bool overlap, c10::Device device, bool nccl)
    : comm_(mpi::Comm::world()), bucket_bytes_(std::max<int64_t>(1, bucket_bytes)), overlap_(overlap) {
  if (nccl) {
    const std::string id = comm_.broadcast(comm_.rank() == 0 ? cuda::nccl_unique_id() : std::string(), 0);
    nccl_ = std::make_unique<cuda::Nccl>(id, comm_.rank(), comm_.size(), device.index());
  }
}

DataParallel::~DataParallel() {
  if (hooks_) hooks_->owner = nullptr;
}

int DataParallel::rank() const { return comm_.rank(); }
int DataParallel::size() const { return comm_.size(); }

void DataParallel::broadcast_model(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  auto send = [&](at::Tensor t) {
    if (!t.defined() || t.numel() == 0) return;
    if (!t.is_cpu()) {  // once per fit: through host memory
      at::Tensor host = t.to(at::kCPU, at::kDouble).contiguous();
      comm_.broadcast(host.data_ptr<double>(), static_cast<std::size_t>(host.numel()));
      t.copy_(host);
    } else if (t.scalar_type() == at::kFloat && t.is_contiguous()) {
      comm_.broadcast(t.data_ptr<float>(), static_cast<std::size_t>(t.numel()));
    } else if (t.scalar_type() == at::kDouble && t.is_contiguous()) {
      comm_.broadcast(t.data_ptr<double>(), static_cast<std::size_t>(t.numel()));
    } else {
      auto copy = t.to(at::kDouble).contiguous();
      comm_.broadcast(copy.data_ptr<double>(), static_cast<std::size_t>(copy.numel()));
      t.copy_(copy);
    }
  };
  for (auto& p : model.parameters()) send(p);
  for (auto& b : model.buffers()) send(b);
}

namespace {

// The trainable parameters, in order; throws std::invalid_argument for one that cannot be averaged.
std::vector<at::Tensor> trainable_parameters(torch::nn::Module& model) {
  std::vector<at::Tensor> params;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    const auto type = item.value().scalar_type();
    if (type != at::kFloat && type != at::kDouble) {
      throw std::invalid_argument("data parallelism: parameter '" + item.key() + "' is " + c10::toString(type) +
                                  "; only float32 and float64 parameters can be averaged");
    }
    params.push_back(item.value());
  }
  return params;
}

}  // namespace

void DataParallel::prepare(torch::nn::Module& model) {
  std::vector<at::Tensor> params = trainable_parameters(model);
  bool same = params.size() == params_.size();
  for (std::size_t i = 0; same && i < params.size(); ++i)
    same = params[i].unsafeGetTensorImpl() == params_[i].unsafeGetTensorImpl();
  if (same && !buckets_.empty()) return;
  if (hooks_) hooks_->owner = nullptr;
  params_ = std::move(params);
  make_buckets();
  add_hooks();
}

// Gradients come roughly in the reverse order of the parameters: so are the buckets filled, each
// up to bucket_bytes_ of one type.
void DataParallel::make_buckets() {
  buckets_.clear();
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  filled_.assign(params_.size(), false);
  int64_t bytes = 0;
  for (std::size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    if (buckets_.empty() || bytes + size > bucket_bytes_ || buckets_.back().flat.scalar_type() != p.scalar_type()) {
      if (!buckets_.empty() && buckets_.back().params.empty()) buckets_.pop_back();
      buckets_.push_back({});
      buckets_.back().flat = torch::empty({0}, p.options().requires_grad(false));
      bytes = 0;
    }
    auto& b = buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    slot_of_[k] = b.params.size();
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].numel());
    b.params.push_back(k);
    bytes += size;
  }
  for (auto& b : buckets_) {
    const int64_t n = b.offsets.back() + params_[b.params.back()].numel();
    b.flat = torch::zeros({n}, b.flat.options());
  }
}

// A hook on each parameter's gradient accumulator tells this object when its gradient is ready
// (through a weak pointer: the hooks outlive a DataParallel that rebuilt them).
void DataParallel::add_hooks() {
  hooks_ = std::make_shared<Hooks>();
  hooks_->owner = this;
  std::weak_ptr<Hooks> weak = hooks_;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[k]);
    if (!accumulator) continue;
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [weak, k](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          if (auto hooks = weak.lock(); hooks && hooks->owner) hooks->owner->on_gradient(k);
          return outputs;
        }));
    hooks_->accumulators.push_back(std::move(accumulator));
  }
}

void DataParallel::arm(double weight, bool find_unused) {
  weight_ = weight;
  armed_ = overlap_ && !find_unused;
  next_start_ = 0;
  std::fill(filled_.begin(), filled_.end(), false);
  for (auto& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    b.started = false;
  }
}

void DataParallel::fill(std::size_t k) {
  auto& b = buckets_[bucket_of_[k]];
  const auto& p = params_[k];
  auto slice = b.flat.narrow(0, b.offsets[slot_of_[k]], p.numel());
  const auto& grad = p.grad();
  if (grad.defined()) {
    at::mul_out(slice, grad.reshape({-1}), weight_);
  } else {
    slice.zero_();
  }
  filled_[k] = true;
  --b.pending;
}

void DataParallel::on_gradient(std::size_t k) {
  if (!armed_ || k >= filled_.size() || filled_[k]) return;
  fill(k);
  if (buckets_[bucket_of_[k]].pending == 0) start_ready();
  if (!nccl_) comm_.test_reductions();  // lets the reductions already started progress
}

void DataParallel::start(Bucket& b) {
  if (nccl_) {
    nccl_->allreduce_sum(b.flat);
  } else {
    // MPI reads host memory: a GPU bucket goes through a copy (a wait for the device).
    at::Tensor& data = b.flat.is_cpu() ? b.flat : (b.host = b.flat.to(at::kCPU));
    if (data.scalar_type() == at::kFloat) {
      comm_.start_allreduce_sum(data.data_ptr<float>(), static_cast<std::size_t>(data.numel()));
    } else {
      comm_.start_allreduce_sum(data.data_ptr<double>(), static_cast<std::size_t>(data.numel()));
    }
  }
  b.started = true;
  reduced_bytes_ += b.flat.numel() * static_cast<int64_t>(b.flat.element_size());
}

// Buckets start in index order on every rank (collectives must match), each once it is full.
void DataParallel::start_ready() {
  while (next_start_ < buckets_.size() && buckets_[next_start_].pending == 0) start(buckets_[next_start_++]);
}

void DataParallel::finish() {
  torch::NoGradGuard no_grad;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (!filled_[k]) fill(k);
  }
  start_ready();
  const auto t0 = std::chrono::steady_clock::now();
  if (nccl_) {
    nccl_->wait();  // the current stream waits on the device; the host goes on
  } else {
    comm_.wait_reductions();
    for (auto& b : buckets_) {
      if (b.host.defined()) b.flat.copy_(b.host);
      b.host = at::Tensor();
    }
  }
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto& p = params_[k];
    const auto& b = buckets_[bucket_of_[k]];
    auto slice = b.flat.narrow(0, b.offsets[slot_of_[k]], p.numel()).view(p.sizes());
    if (p.grad().defined()) {
      p.mutable_grad().copy_(slice);
    } else {
      p.mutable_grad() = slice.clone();
    }
  }
  armed_ = false;
}

std::vector<double> DataParallel::allreduce(std::vector<double> values) {
  if (!values.empty()) comm_.allreduce_sum(values.data(), values.size());
  return values;
}

at::Tensor DataParallel::allreduce(const at::Tensor& value) {
  if (nccl_) {
    at::Tensor sum = value.to(at::kFloat).clone();  // NCCL sums float32 (the loss: one number)
    nccl_->allreduce_sum(sum);
    nccl_->wait();
    return sum.to(value.scalar_type());
  }
  const std::vector<double> sum = allreduce(std::vector<double>{value.item<double>()});
  return at::full({}, sum[0], value.options());
}

std::string DataParallel::broadcast(const std::string& value) { return comm_.broadcast(value, 0); }

}  // namespace baton::detail

namespace baton {

int launcher_rank() { return mpi::launched_rank(); }
int launcher_size() { return mpi::launched_size(); }

bool data_parallel_active() { return mpi::Comm::started() && mpi::Comm::world().size() > 1; }

void abort_all_ranks(int code) {
  if (mpi::Comm::started()) mpi::Comm::world().abort(code);
  std::exit(code);
}

}  // namespace baton
