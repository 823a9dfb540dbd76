#include "launcher_env.h"

#include <array>
#include <cstring>

#include "value_text.h"

namespace gmp {
namespace {

struct Launcher {
  const char* name;
  const char* rank;        // set by this launcher: decides which launcher it is, with `proof`
  const char* proof;       // set by this launcher alone, nullptr: the rank variable is its own
  const char* local_rank;  // nullptr: this launcher does not say
  const char* world_size;
};

// Checked in this order (launcher_env.h says why torchrun is first).
// torchrun always sets TORCHELASTIC_RUN_ID ("none" by default); RANK without it is some other
// launcher or script using PyTorch's env:// convention (DeepSpeed's launcher, a shell loop): "env".
constexpr std::array<Launcher, 7> kLaunchers{{
    {"torchrun", "RANK", "TORCHELASTIC_RUN_ID", "LOCAL_RANK", "WORLD_SIZE"},
    {"env", "RANK", nullptr, "LOCAL_RANK", "WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", nullptr, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"mvapich", "MV2_COMM_WORLD_RANK", nullptr, "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE"},
    {"pmix", "PMIX_RANK", nullptr, nullptr, nullptr},
    {"pmi", "PMI_RANK", nullptr, "MPI_LOCALRANKID", "PMI_SIZE"},
    {"slurm", "SLURM_PROCID", nullptr, "SLURM_LOCALID", "SLURM_NTASKS"},
}};

std::optional<uint64_t> number(const EnvLookup& getenv, const char* name) {
  const char* v = name == nullptr ? nullptr : getenv(name);
  return v == nullptr ? std::nullopt : parse_uint(v);
}

std::string job_id(const EnvLookup& getenv) {
  for (const char* name : {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE",
                           "OMPI_MCA_ess_base_jobid"}) {
    const char* v = getenv(name);
    // torchrun's run id is "none" unless --rdzv-id was given: no job id at all.
    if (v != nullptr && *v != '\0' && std::strcmp(v, "none") != 0) return v;
  }
  return "";
}

}  // namespace

JobIdentity job_identity(const EnvLookup& getenv) {
  JobIdentity id;
  id.job_id = job_id(getenv);
  if (const char* inv = getenv(kInvocationVariable); inv != nullptr) id.invocation = inv;
  for (const Launcher& l : kLaunchers) {
    const char* r = getenv(l.rank);
    if (r == nullptr || *r == '\0' || (l.proof != nullptr && getenv(l.proof) == nullptr)) continue;
    id.launcher = l.name;
    id.rank = number(getenv, l.rank);
    id.local_rank = number(getenv, l.local_rank);
    id.world_size = number(getenv, l.world_size);
    // Slurm's SLURM_NTASKS is missing in some allocations; SLURM_NPROCS is its older name.
    if (!id.world_size && std::strcmp(l.name, "slurm") == 0) id.world_size = number(getenv, "SLURM_NPROCS");
    break;
  }
  return id;
}

}  // namespace gmp
