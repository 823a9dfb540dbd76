// Rank, local rank, world size, launcher and job id from each launcher's variables
// (collector/launcher_env.h, docs/run-directory.md "Ranks and jobs").
#include "launcher_env.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace gmp {
namespace {

JobIdentity identity(const std::map<std::string, std::string>& env) {
  return job_identity([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LauncherEnv, NoLauncher) { EXPECT_EQ(identity({}), JobIdentity{}); }

TEST(LauncherEnv, EachLauncher) {
  EXPECT_EQ(identity({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"TORCHELASTIC_RUN_ID", "r7"}}),
            (JobIdentity{"torchrun", 5, 1, 8, "r7"}));
  EXPECT_EQ(identity({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                      {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_MCA_ess_base_jobid", "4107"}}),
            (JobIdentity{"openmpi", 3, 0, 4, "4107"}));
  EXPECT_EQ(identity({{"MV2_COMM_WORLD_RANK", "2"}, {"MV2_COMM_WORLD_LOCAL_RANK", "2"}, {"MV2_COMM_WORLD_SIZE", "3"}}),
            (JobIdentity{"mvapich", 2, 2, 3, ""}));
  EXPECT_EQ(identity({{"PMIX_RANK", "9"}, {"PMIX_NAMESPACE", "prterun-node1-123@1"}}),
            (JobIdentity{"pmix", 9, std::nullopt, std::nullopt, "prterun-node1-123@1"}));
  EXPECT_EQ(identity({{"PMI_RANK", "1"}, {"MPI_LOCALRANKID", "1"}, {"PMI_SIZE", "2"}}),
            (JobIdentity{"pmi", 1, 1, 2, ""}));
  EXPECT_EQ(identity({{"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS", "16"}, {"SLURM_JOB_ID", "991"}}),
            (JobIdentity{"slurm", 6, 2, 16, "991"}));
  EXPECT_EQ(identity({{"SLURM_PROCID", "6"}, {"SLURM_NPROCS", "12"}}),
            (JobIdentity{"slurm", 6, std::nullopt, 12, ""}));
}

TEST(LauncherEnv, TorchrunInsideSlurmAndMpiKeepsTheWorkersRankAndTheSchedulersJob) {
  EXPECT_EQ(identity({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "55"},
                      {"RANK", "7"}, {"LOCAL_RANK", "3"}, {"WORLD_SIZE", "8"}, {"TORCHELASTIC_RUN_ID", "none"}}),
            (JobIdentity{"torchrun", 7, 3, 8, "55"}));
  EXPECT_EQ(identity({{"OMPI_COMM_WORLD_RANK", "1"}, {"PMIX_RANK", "1"}, {"PBS_JOBID", "12.pbs"}}),
            (JobIdentity{"openmpi", 1, std::nullopt, std::nullopt, "12.pbs"}));
  EXPECT_EQ(identity({{"LSB_JOBID", "8"}, {"PMI_RANK", "0"}}), (JobIdentity{"pmi", 0, std::nullopt, std::nullopt, "8"}));
}

TEST(LauncherEnv, ValuesThatAreNotNumbersReadAsUnknown) {
  EXPECT_EQ(identity({{"RANK", "x"}, {"LOCAL_RANK", "-1"}, {"WORLD_SIZE", " 8"}, {"TORCHELASTIC_RUN_ID", "none"}}),
            (JobIdentity{"torchrun", std::nullopt, std::nullopt, std::nullopt, ""}));
  // An empty rank variable is not a launcher: the next one decides.
  EXPECT_EQ(identity({{"RANK", ""}, {"SLURM_PROCID", "0"}, {"TORCHELASTIC_RUN_ID", "none"}}),
            (JobIdentity{"slurm", 0, std::nullopt, std::nullopt, ""}));
}

// torchrun always sets TORCHELASTIC_RUN_ID: RANK without it is a script or another launcher using
// PyTorch's env:// variables, never said to be torchrun.
TEST(LauncherEnv, RankWithoutTorchrunsRunIdIsTheEnvConvention) {
  EXPECT_EQ(identity({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), (JobIdentity{"env", 1, std::nullopt, 2, ""}));
  EXPECT_EQ(identity({{"RANK", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "7"}}),
            (JobIdentity{"env", 1, std::nullopt, std::nullopt, "7"}));
}

TEST(LauncherEnv, GpumemprofRunsInvocationIsKeptAsGiven) {
  JobIdentity expected{"torchrun", 0, std::nullopt, std::nullopt, ""};
  expected.invocation = "1764337075123456789-4242";
  EXPECT_EQ(identity({{"RANK", "0"}, {"TORCHELASTIC_RUN_ID", "none"}, {"GPUMEMPROF_INVOCATION", "1764337075123456789-4242"}}),
            expected);
  EXPECT_EQ(identity({}).invocation, "");
}

}  // namespace
}  // namespace gmp
