#include "mpi/comm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#ifdef BATON_HAVE_MPI
#include <mpi.h>
#endif

namespace baton::mpi {

bool built() {
#ifdef BATON_HAVE_MPI
  return true;
#else
  return false;
#endif
}

namespace {

int env_int(const char* name, int fallback) {
  const char* v = name != nullptr ? std::getenv(name) : nullptr;
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 && n < (1L << 24) ? static_cast<int>(n) : fallback;
}

// Slurm's SLURM_STEP_TASKS_PER_NODE ("2(x3),1": two tasks on each of three nodes, then one) at
// this node's index (SLURM_NODEID).
int slurm_tasks_on_this_node() {
  const char* spec = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  if (spec == nullptr) return 0;
  int node = env_int("SLURM_NODEID", 0);
  std::string text(spec);
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    const int tasks = std::atoi(part.c_str());
    const std::size_t x = part.find("(x");
    const int times = x == std::string::npos ? 1 : std::max(1, std::atoi(part.c_str() + x + 2));
    if (node < times) return tasks;
    node -= times;
    at = comma + 1;
  }
  return 0;
}

// One launcher's variables, read together: a rank from one launcher is never paired with another's
// size. Open MPI's mpirun, MPICH's and Intel MPI's Hydra (PMI), Slurm's srun, and a bare PMIx
// launcher (prterun), in that order.
struct LauncherVariables {
  const char* launcher;
  const char* size;  // present: this launcher started the process
  const char* rank;
  const char* local_rank;
  const char* local_size;
};
constexpr LauncherVariables kLaunchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"Hydra (PMI)", "PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm srun", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID", nullptr},
    {"PMIx", "PMIX_RANK", "PMIX_RANK", nullptr, nullptr},
};

}  // namespace

std::optional<Launch> launch() {
  for (const LauncherVariables& l : kLaunchers) {
    if (std::getenv(l.size) == nullptr) continue;
    Launch out;
    out.launcher = l.launcher;
    out.size = l.size == l.rank ? 1 : std::max(1, env_int(l.size, 1));  // PMIx alone says no size
    out.rank = std::min(env_int(l.rank, 0), out.size - 1);
    out.local_size = l.local_size != nullptr ? env_int(l.local_size, 0) : slurm_tasks_on_this_node();
    if (out.local_size < 1) out.local_size = out.size;  // not said: as if all on this machine
    out.local_rank = std::min(env_int(l.local_rank, out.rank), out.local_size - 1);
    return out;
  }
  return std::nullopt;
}

bool launched() { return launch().has_value(); }

int launched_size() {
  const auto l = launch();
  return l ? l->size : 1;
}

int launched_rank() {
  const auto l = launch();
  return l ? l->rank : 0;
}

int launched_local_rank() {
  const auto l = launch();
  return l ? l->local_rank : 0;
}

int launched_local_size() {
  const auto l = launch();
  return l ? l->local_size : 1;
}

int cores_per_local_rank() {
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  return std::max(1, cores / launched_local_size());
}

namespace {
std::atomic<bool> world_made{false};
}  // namespace

bool Comm::started() { return world_made.load(); }

#ifdef BATON_HAVE_MPI

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string("MPI: ") + what + ": " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace

struct Comm::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<MPI_Request> requests;
  std::vector<MPI_Request> reductions;
  std::vector<std::unique_ptr<std::string>> buffers;  // of the sends in flight
  bool we_initialised = false;
};

namespace {
Comm::Impl* finalize_impl = nullptr;
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || !finalize_impl || !finalize_impl->we_initialised) return;
  if (!finalize_impl->requests.empty()) {
    MPI_Waitall(static_cast<int>(finalize_impl->requests.size()), finalize_impl->requests.data(), MPI_STATUSES_IGNORE);
  }
  MPI_Comm_free(&finalize_impl->comm);
  MPI_Finalize();
}
}  // namespace

Comm::Comm() : impl_(new Impl) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    impl_->we_initialised = true;
    finalize_impl = impl_;
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl_->comm, &rank_);
  MPI_Comm_size(impl_->comm, &size_);
}

Comm& Comm::world() {
  static std::once_flag once;
  static Comm* comm = nullptr;
  std::call_once(once, [] {
    comm = new Comm();  // lives until exit: MPI is finalised then
    world_made = true;
  });
  return *comm;
}

void Comm::barrier() { check(MPI_Barrier(impl_->comm), "MPI_Barrier"); }

std::vector<std::string> Comm::gather(const std::string& mine, int root) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank_ == root ? static_cast<std::size_t>(size_) : 0);
  check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, impl_->comm), "MPI_Gather");
  std::vector<int> offsets(lens.size());
  std::string all;
  if (rank_ == root) {
    long total = 0;
    for (std::size_t i = 0; i < lens.size(); ++i) {
      offsets[i] = static_cast<int>(total);
      total += lens[i];
    }
    if (total > 0x7fffffff) throw std::runtime_error("MPI gather: more than 2 GiB in one gather");
    all.resize(static_cast<std::size_t>(total));
  }
  check(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, root, impl_->comm),
        "MPI_Gatherv");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lens.size(); ++i)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lens[i])));
  return out;
}

std::string Comm::broadcast(const std::string& value, int root) {
  long len = static_cast<long>(value.size());
  check(MPI_Bcast(&len, 1, MPI_LONG, root, impl_->comm), "MPI_Bcast");
  std::string out = rank_ == root ? value : std::string(static_cast<std::size_t>(len), '\0');
  check(MPI_Bcast(out.data(), static_cast<int>(len), MPI_CHAR, root, impl_->comm), "MPI_Bcast");
  return out;
}

std::vector<int> Comm::allgather(int mine) {
  std::vector<int> out(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&mine, 1, MPI_INT, out.data(), 1, MPI_INT, impl_->comm), "MPI_Allgather");
  return out;
}

void Comm::allreduce_sum(float* data, std::size_t n) {
  check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, impl_->comm), "MPI_Allreduce");
}

void Comm::allreduce_sum(double* data, std::size_t n) {
  check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, impl_->comm), "MPI_Allreduce");
}

void Comm::start_allreduce_sum(float* data, std::size_t n) {
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, impl_->comm, &request),
        "MPI_Iallreduce");
  impl_->reductions.push_back(request);
}

void Comm::start_allreduce_sum(double* data, std::size_t n) {
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, impl_->comm, &request),
        "MPI_Iallreduce");
  impl_->reductions.push_back(request);
}

bool Comm::test_reductions() {
  if (impl_->reductions.empty()) return true;
  int done = 0;
  check(MPI_Testall(static_cast<int>(impl_->reductions.size()), impl_->reductions.data(), &done, MPI_STATUSES_IGNORE),
        "MPI_Testall");
  if (done) impl_->reductions.clear();
  return done != 0;
}

void Comm::wait_reductions() {
  if (impl_->reductions.empty()) return;
  check(MPI_Waitall(static_cast<int>(impl_->reductions.size()), impl_->reductions.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
  impl_->reductions.clear();
}

void Comm::allgather(const float* mine, float* out, std::size_t n) {
  const bool in_place = mine == out + static_cast<std::size_t>(rank_) * n;
  check(MPI_Allgather(in_place ? MPI_IN_PLACE : mine, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n),
                      MPI_FLOAT, impl_->comm),
        "MPI_Allgather");
}

void Comm::allgather(const std::uint16_t* mine, std::uint16_t* out, std::size_t n) {
  const bool in_place = mine == out + static_cast<std::size_t>(rank_) * n;
  check(MPI_Allgather(in_place ? MPI_IN_PLACE : mine, static_cast<int>(n), MPI_UINT16_T, out, static_cast<int>(n),
                      MPI_UINT16_T, impl_->comm),
        "MPI_Allgather");
}

void Comm::gather(const float* mine, float* out, std::size_t n, int root) {
  check(MPI_Gather(mine, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n), MPI_FLOAT, root, impl_->comm),
        "MPI_Gather");
}

void Comm::reduce_scatter_sum(const float* in, float* out, std::size_t n) {
  check(MPI_Reduce_scatter_block(in, out, static_cast<int>(n), MPI_FLOAT, MPI_SUM, impl_->comm),
        "MPI_Reduce_scatter_block");
}

void Comm::broadcast(float* data, std::size_t n, int root) {
  check(MPI_Bcast(data, static_cast<int>(n), MPI_FLOAT, root, impl_->comm), "MPI_Bcast");
}

void Comm::broadcast(double* data, std::size_t n, int root) {
  check(MPI_Bcast(data, static_cast<int>(n), MPI_DOUBLE, root, impl_->comm), "MPI_Bcast");
}

void Comm::send(int dest, int tag, const std::string& message) {
  impl_->buffers.push_back(std::make_unique<std::string>(message));
  MPI_Request request;
  const auto& buffer = *impl_->buffers.back();
  check(MPI_Isend(buffer.data(), static_cast<int>(buffer.size()), MPI_CHAR, dest, tag, impl_->comm, &request),
        "MPI_Isend");
  impl_->requests.push_back(request);
}

std::optional<std::pair<int, std::string>> Comm::poll(int tag) {
  int flag = 0;
  MPI_Status status;
  check(MPI_Iprobe(MPI_ANY_SOURCE, tag, impl_->comm, &flag, &status), "MPI_Iprobe");
  if (!flag) return std::nullopt;
  return std::make_pair(status.MPI_SOURCE, recv(status.MPI_SOURCE, tag));
}

std::string Comm::recv(int source, int tag) {
  MPI_Status status;
  check(MPI_Probe(source, tag, impl_->comm, &status), "MPI_Probe");
  int len = 0;
  MPI_Get_count(&status, MPI_CHAR, &len);
  std::string out(static_cast<std::size_t>(len), '\0');
  check(MPI_Recv(out.data(), len, MPI_CHAR, source, tag, impl_->comm, MPI_STATUS_IGNORE), "MPI_Recv");
  return out;
}

void Comm::complete_sends() {
  if (impl_->requests.empty()) return;
  check(MPI_Waitall(static_cast<int>(impl_->requests.size()), impl_->requests.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
  impl_->requests.clear();
  impl_->buffers.clear();
}

void Comm::abort(int code) {
  MPI_Abort(impl_->comm, code);
  std::_Exit(code);
}

#else  // no MPI at build time

struct Comm::Impl {};

namespace {
[[noreturn]] void no_mpi() {
  throw std::runtime_error("baton was built without MPI: install libopenmpi-dev (scripts/install-deps.sh) and rebuild");
}
}  // namespace

Comm::Comm() { no_mpi(); }
Comm& Comm::world() { no_mpi(); }
void Comm::barrier() { no_mpi(); }
std::vector<std::string> Comm::gather(const std::string&, int) { no_mpi(); }
std::string Comm::broadcast(const std::string&, int) { no_mpi(); }
std::vector<int> Comm::allgather(int) { no_mpi(); }
void Comm::allreduce_sum(float*, std::size_t) { no_mpi(); }
void Comm::allreduce_sum(double*, std::size_t) { no_mpi(); }
void Comm::start_allreduce_sum(float*, std::size_t) { no_mpi(); }
void Comm::start_allreduce_sum(double*, std::size_t) { no_mpi(); }
bool Comm::test_reductions() { no_mpi(); }
void Comm::wait_reductions() { no_mpi(); }
void Comm::allgather(const float*, float*, std::size_t) { no_mpi(); }
void Comm::allgather(const std::uint16_t*, std::uint16_t*, std::size_t) { no_mpi(); }
void Comm::reduce_scatter_sum(const float*, float*, std::size_t) { no_mpi(); }
void Comm::gather(const float*, float*, std::size_t, int) { no_mpi(); }
void Comm::broadcast(float*, std::size_t, int) { no_mpi(); }
void Comm::broadcast(double*, std::size_t, int) { no_mpi(); }
void Comm::send(int, int, const std::string&) { no_mpi(); }
std::optional<std::pair<int, std::string>> Comm::poll(int) { no_mpi(); }
std::string Comm::recv(int, int) { no_mpi(); }
void Comm::complete_sends() { no_mpi(); }
void Comm::abort(int code) { std::_Exit(code); }

#endif

}  // namespace baton::mpi
