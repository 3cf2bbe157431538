// MpiRanks in a build without MPI (harness/sweep_mpi.h): a single process;
// started as one of several ranks, it refuses rather than have every rank
// run the whole sweep.
#include "harness/sweep_mpi.h"
#include "model/errors.h"

namespace remat {

std::unique_ptr<MpiRanks> MpiRanks::IfLaunched() {
  if (LaunchedAsRanks()) {
    throw InputError(
        "sweep: started as one of several MPI ranks, but this remat was "
        "built without MPI (install libopenmpi-dev and rebuild)");
  }
  return nullptr;
}

}  // namespace remat
