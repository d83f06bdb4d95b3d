// This process among the ranks of a job that mpirun/mpiexec or srun started (data parallelism,
// include/baton/train/trainer.h's Distributed), known before MPI starts.
#pragma once

namespace baton {

// This process's rank as mpirun/mpiexec/srun's environment gives it (0 when not started by one),
// known before MPI starts: e.g. to create files on rank 0 only.
int launcher_rank();
// The ranks of the job mpirun/mpiexec/srun started this process in (1 when none).
int launcher_size();
// Data parallelism is running: MPI was started with more than one rank.
bool data_parallel_active();
// Ends every rank of the job with `code` (MPI_Abort). A rank that fails calls this, after saying
// why, so that the others do not wait for it forever.
[[noreturn]] void abort_all_ranks(int code);

}  // namespace baton
