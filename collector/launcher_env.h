// Reads which rank of which job a process is from the variables its launcher sets: torchrun,
// RANK alone ("env"), Open MPI, MVAPICH2, PMIx, PMI (MPICH, Intel MPI) and Slurm; and which
// `gpumemprof run` started it (GPUMEMPROF_INVOCATION). Pure logic over a lookup function,
// so the unit tests can feed it any environment.
#pragma once

#include <functional>

#include "process_record.h"

namespace gmp {

using EnvLookup = std::function<const char*(const char*)>;

// The first launcher (in the order above) whose rank variable is set decides rank, local rank and
// world size, each from that launcher's own variables; a value that is not a non-negative decimal
// integer reads as unknown. torchrun (RANK with TORCHELASTIC_RUN_ID) comes first because it runs inside the others (a Slurm step
// runs one torchrun per node, whose SLURM_PROCID is the node's, not the worker's). The job id is
// the scheduler's (SLURM_JOB_ID, PBS_JOBID, LSB_JOBID) wherever the launcher runs, else the
// launcher's own (TORCHELASTIC_RUN_ID unless "none", PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid).
JobIdentity job_identity(const EnvLookup& getenv);

}  // namespace gmp
