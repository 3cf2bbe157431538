// MpiRanks in `remat` (harness/sweep_mpi.h): launched as one of several
// ranks, the process becomes remat-mpi, the same program with Open MPI
// linked, built and installed beside it, with the same arguments. `remat`
// itself does not load Open MPI's shared libraries: they were 0.9 ms of its
// 4.1 ms start-up, and start-up is most of a small graph's solve
// (results/kusumoto_dp_grid/README.md). A sweep over ranks pays for them
// once per rank, in the exec, before it has planned or written anything.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/sweep_mpi.h"
#include "model/errors.h"

namespace remat {

std::unique_ptr<MpiRanks> MpiRanks::IfLaunched() {
  if (!LaunchedAsRanks()) return nullptr;
  std::error_code error;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path mpi = self.parent_path() / "remat-mpi";
  // This process's arguments, NUL-terminated one after another.
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
  std::vector<char*> argv;
  for (size_t at = 0; at < cmdline.size();) {
    argv.push_back(&cmdline[at]);
    const size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  std::string program = mpi.string();
  if (argv.empty()) {
    argv.push_back(program.data());
  } else {
    argv[0] = program.data();
  }
  argv.push_back(nullptr);
  if (!error) execv(program.c_str(), argv.data());
  throw InputError(fmt::format(
      "sweep: started as one of several MPI ranks, but {} did not start "
      "({}): it is built beside remat where MPI is found",
      program, error ? error.message() : std::strerror(errno)));
}

}  // namespace remat
