// What the launcher that started a process says (src/mpi/comm.cpp): one launcher's variables read
// together, never a rank from one launcher with another's size.
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "mpi/comm.h"

namespace baton::mpi {
namespace {

// Every launcher variable unset for the test's life, then put back as it was.
class CleanEnvironment {
 public:
  CleanEnvironment() {
    for (const char* name : kNames) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
  }
  ~CleanEnvironment() {
    for (const char* name : kNames) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  CleanEnvironment(const CleanEnvironment&) = delete;
  CleanEnvironment& operator=(const CleanEnvironment&) = delete;
  void set(const std::map<std::string, std::string>& vars) {
    for (const auto& [name, value] : vars) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                                           "PMI_SIZE",
                                           "PMI_RANK",
                                           "MPI_LOCALRANKID",
                                           "MPI_LOCALNRANKS",
                                           "SLURM_STEP_NUM_TASKS",
                                           "SLURM_PROCID",
                                           "SLURM_LOCALID",
                                           "SLURM_STEP_TASKS_PER_NODE",
                                           "SLURM_NODEID",
                                           "SLURM_NTASKS",
                                           "PMIX_RANK"};
  std::map<std::string, std::string> saved_;
};

TEST(Launch, NoLauncherIsOneProcess) {
  CleanEnvironment env;
  EXPECT_FALSE(launch().has_value());
  EXPECT_FALSE(launched());
  EXPECT_EQ(launched_size(), 1);
  EXPECT_EQ(launched_rank(), 0);
  EXPECT_EQ(launched_local_rank(), 0);
  EXPECT_EQ(launched_local_size(), 1);
}

TEST(Launch, OpenMpisVariables) {
  CleanEnvironment env;
  env.set({{"OMPI_COMM_WORLD_SIZE", "4"},
           {"OMPI_COMM_WORLD_RANK", "3"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  const auto l = launch();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, "Open MPI");
  EXPECT_EQ(l->size, 4);
  EXPECT_EQ(l->rank, 3);
  EXPECT_EQ(l->local_rank, 1);
  EXPECT_EQ(l->local_size, 2);
}

TEST(Launch, HydraAndSrunEachReadAsOneSet) {
  CleanEnvironment env;
  env.set({{"PMI_SIZE", "3"}, {"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}});
  ASSERT_TRUE(launch().has_value());
  EXPECT_EQ(launch()->launcher, "Hydra (PMI)");
  EXPECT_EQ(launched_rank(), 2);
  EXPECT_EQ(launched_local_size(), 1);
}

TEST(Launch, SrunsTasksOnThisNodeComeFromTheStepsTasksPerNode) {
  CleanEnvironment env;
  // Six tasks: two on each of nodes 0 and 1, two on node 2; this is task 5, the second on node 2.
  env.set({{"SLURM_STEP_NUM_TASKS", "6"},
           {"SLURM_PROCID", "5"},
           {"SLURM_LOCALID", "1"},
           {"SLURM_STEP_TASKS_PER_NODE", "2(x2),2"},
           {"SLURM_NODEID", "2"}});
  const auto l = launch();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, "Slurm srun");
  EXPECT_EQ(l->size, 6);
  EXPECT_EQ(l->rank, 5);
  EXPECT_EQ(l->local_rank, 1);
  EXPECT_EQ(l->local_size, 2);
}

TEST(Launch, ABatchScriptsJobSizeIsNotAStepOfSeveralTasks) {
  CleanEnvironment env;
  // sbatch -n 8 runs its script once: SLURM_NTASKS says the job's 8, no step started this process.
  env.set({{"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "0"}});
  EXPECT_EQ(launched_size(), 1);
  EXPECT_EQ(launched_rank(), 0);
}

TEST(Launch, OneLaunchersRankIsNeverPairedWithAnothersSize) {
  CleanEnvironment env;
  // mpirun inside a Slurm step: Open MPI's own variables say what this process is.
  env.set({{"OMPI_COMM_WORLD_SIZE", "2"},
           {"OMPI_COMM_WORLD_RANK", "1"},
           {"SLURM_STEP_NUM_TASKS", "8"},
           {"SLURM_PROCID", "7"}});
  EXPECT_EQ(launched_size(), 2);
  EXPECT_EQ(launched_rank(), 1);
}

TEST(Launch, MalformedOrOutOfRangeValuesAreClamped) {
  CleanEnvironment env;
  env.set({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "9"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "x"}});
  EXPECT_EQ(launched_size(), 2);
  EXPECT_EQ(launched_rank(), 1);        // at most size - 1
  EXPECT_EQ(launched_local_size(), 2);  // not said: as if every rank were on this machine
  EXPECT_EQ(launched_local_rank(), 1);  // unreadable: its rank
}

TEST(Launch, ABarePmixLauncherSaysNoSize) {
  CleanEnvironment env;
  env.set({{"PMIX_RANK", "0"}});
  EXPECT_TRUE(launched());
  EXPECT_EQ(launched_size(), 1);
}

}  // namespace
}  // namespace baton::mpi
