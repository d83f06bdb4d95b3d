// Data parallelism across MPI ranks (private to train): gradients are averaged in buckets that are
// reduced while backward still runs (autograd hooks on each parameter's gradient accumulator), the
// approach of Horovod and PyTorch DDP. On GPUs the buckets are reduced by NCCL on the device (no
// host wait); otherwise by MPI on the host (GPU buckets staged through host memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace baton::mpi {
class Comm;
}
namespace baton::cuda {
class Nccl;
}

namespace baton::detail {

class DataParallel {
 public:
  // `bucket_bytes`: gradients per bucket; `overlap`: reduce a bucket as soon as its gradients are
  // ready during backward (else all after backward); `nccl`: reduce with NCCL on `device` (a GPU).
  DataParallel(int64_t bucket_bytes, bool overlap, c10::Device device, bool nccl);
  ~DataParallel();
  int rank() const;
  int size() const;

  // Every rank takes rank 0's parameters and buffers.
  void broadcast_model(torch::nn::Module& model);
  // Before a batch: rebuilds the buckets when the trainable parameters changed.
  void prepare(torch::nn::Module& model);
  // Before the last backward of a batch: this rank's gradients count with `weight` (its share of
  // the global batch). With `find_unused` (or without overlap) nothing is reduced during backward.
  void arm(double weight, bool find_unused);
  // After that backward: reduces what is left, waits, and writes the averaged gradients (a
  // parameter without a gradient on any rank gets zeros).
  void finish();

  // Sums over every rank.
  std::vector<double> allreduce(std::vector<double> values);
  // The sum of `value` (a tensor on the run's device) over every rank; with NCCL on the device.
  at::Tensor allreduce(const at::Tensor& value);
  bool uses_nccl() const { return nccl_ != nullptr; }
  cuda::Nccl* nccl() const { return nccl_.get(); }  // null without
  std::string broadcast(const std::string& value);

  // Seconds spent waiting for reductions in finish() (what backward did not hide), and reduced.
  double wait_seconds() const { return wait_s_; }
  int64_t reduced_bytes() const { return reduced_bytes_; }
  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    at::Tensor flat;
    at::Tensor host;                  // a GPU bucket's copy that MPI reduces
    std::vector<std::size_t> params;  // indices into params_
    std::vector<int64_t> offsets;
    int pending = 0;
    bool started = false;
  };
  struct Hooks;
  void make_buckets();  // prepare(), step by step
  void add_hooks();
  void on_gradient(std::size_t param);
  void fill(std::size_t param);
  void start_ready();
  void start(Bucket& bucket);

  mpi::Comm& comm_;
  std::unique_ptr<cuda::Nccl> nccl_;
  int64_t bucket_bytes_;
  bool overlap_;
  std::vector<at::Tensor> params_;
  std::vector<std::size_t> bucket_of_;  // per param
  std::vector<std::size_t> slot_of_;    // per param: index within its bucket
  std::vector<bool> filled_;            // per param, this batch
  std::vector<Bucket> buckets_;
  std::size_t next_start_ = 0;
  bool armed_ = false;
  double weight_ = 1.0;
  std::shared_ptr<Hooks> hooks_;
  double wait_s_ = 0.0;
  int64_t reduced_bytes_ = 0;
};

}  // namespace baton::detail
