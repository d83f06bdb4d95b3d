// A thin, private wrapper of the MPI calls baton makes (plan's MpiSession, train's data parallelism).
// Only src/mpi/comm.cpp includes <mpi.h>; without MPI at build time every call throws
// std::runtime_error saying so. MPI is initialised on first use (MPI_THREAD_SERIALIZED: one thread
// at a time calls MPI) and finalised at exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace baton::mpi {

bool built();  // compiled against an MPI library
// What the launcher (mpirun/mpiexec, a PMI launcher, srun) says in the environment, before MPI
// starts: whether it started this process, the job's ranks (1 when none), this process's rank
// (0 when not one of several), its rank among those on this machine (which GPU it takes), the
// ranks started on this machine, and the machine's cores divided among them.
struct Launch {
  std::string launcher;  // "Open MPI", "Hydra (PMI)", "Slurm srun", "PMIx"
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
};
// The launcher that started this process and what it says, read as that launcher's own set of
// variables; nullopt when no launcher started it.
std::optional<Launch> launch();
bool launched();
int launched_size();
int launched_rank();
int launched_local_rank();
int launched_local_size();
int cores_per_local_rank();

class Comm {
 public:
  // A duplicate of MPI_COMM_WORLD (baton's messages never mix with the program's own).
  static Comm& world();
  // Whether world() has been made (MPI started by baton or found started).
  static bool started();
  int rank() const { return rank_; }
  int size() const { return size_; }

  void barrier();
  // Every rank's string, on `root` (others get an empty vector).
  std::vector<std::string> gather(const std::string& mine, int root = 0);
  // `root`'s string on every rank.
  std::string broadcast(const std::string& value, int root = 0);
  std::vector<int> allgather(int mine);
  // In-place sums over all ranks.
  void allreduce_sum(float* data, std::size_t n);
  void allreduce_sum(double* data, std::size_t n);
  // Non-blocking in-place sums (MPI_Iallreduce), started in the same order on every rank; the data
  // must stay put until wait_reductions(). test_reductions() lets them progress and says whether
  // all have ended.
  void start_allreduce_sum(float* data, std::size_t n);
  void start_allreduce_sum(double* data, std::size_t n);
  bool test_reductions();
  void wait_reductions();
  // Every rank's `n` values in rank order into `out` (n * size() values): MPI_Allgather. In place
  // when `mine` is this rank's block of `out` (out + rank() * n).
  void allgather(const float* mine, float* out, std::size_t n);
  // The same for 16-bit values (bfloat16's or float16's bits).
  void allgather(const std::uint16_t* mine, std::uint16_t* out, std::size_t n);
  // The same into `root`'s `out` only (MPI_Gather; the others' `out` is not touched).
  void gather(const float* mine, float* out, std::size_t n, int root = 0);
  // The sums over the ranks of `in` (n * size() values), of which this rank keeps its block (values
  // rank() * n to (rank() + 1) * n) in `out`: MPI_Reduce_scatter_block.
  void reduce_scatter_sum(const float* in, float* out, std::size_t n);
  void broadcast(float* data, std::size_t n, int root = 0);
  void broadcast(double* data, std::size_t n, int root = 0);

  // Point-to-point notices: send() does not block (the message is kept until complete_sends());
  // poll() returns a waiting message with `tag` from any rank; recv() blocks.
  void send(int dest, int tag, const std::string& message);
  std::optional<std::pair<int, std::string>> poll(int tag);
  std::string recv(int source, int tag);
  void complete_sends();

  // Ends every rank of the job (MPI_Abort) with `code`.
  [[noreturn]] void abort(int code);

  struct Impl;

 private:
  Comm();
  Impl* impl_ = nullptr;  // lives until exit
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace baton::mpi
