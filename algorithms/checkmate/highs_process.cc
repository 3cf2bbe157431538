// Runs the `highs` executable on a staged model (highs_process.h).
#include "algorithms/checkmate/highs_process.h"

#include <fmt/format.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "algorithms/checkmate/child_process.h"
#include "algorithms/checkmate/milp_files.h"

namespace remat {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

// The value after `label` on a line of HiGHS's solving report
// ("  Dual bound        5"), if the log has that line.
std::optional<double> ReportValue(const std::string& log,
                                  const std::string& label) {
  std::istringstream lines(log);
  std::string line;
  std::optional<double> value;
  while (std::getline(lines, line)) {
    const size_t at = line.find(label);
    if (at == std::string::npos || line.find_first_not_of(' ') != at) {
      continue;
    }
    char* end = nullptr;
    const std::string rest = line.substr(at + label.size());
    const double v = std::strtod(rest.c_str(), &end);
    if (end != rest.c_str()) value = v;
  }
  return value;
}

}  // namespace

std::optional<std::string> FindHighs() {
  if (const char* given = std::getenv("REMAT_HIGHS")) {
    if (*given == '\0' || !IsExecutable(given)) return std::nullopt;
    return std::string(given);
  }
#ifdef REMAT_HIGHS_DEFAULT
  if (IsExecutable(REMAT_HIGHS_DEFAULT))
    return std::string(REMAT_HIGHS_DEFAULT);
#endif
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (dir.empty()) continue;
      const std::string candidate = dir + "/highs";
      if (IsExecutable(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

HighsRun RunHighs(const CheckmateModel& model,
                  const std::optional<std::vector<double>>& start,
                  double seconds, int threads) {
  HighsRun run;
  const std::optional<std::string> highs = FindHighs();
  if (!highs) {
    run.error =
        "the HiGHS executable `highs` was not found (REMAT_HIGHS, highsbox "
        "in the build's Python environment, PATH); install highsbox "
        "(python/requirements.txt) or choose solver=cbc";
    return run;
  }
  TempDir dir("remat-highs-");
  if (dir.path().empty()) {
    run.error = fmt::format("cannot create a temporary folder for HiGHS: {}",
                            strerror(errno));
    return run;
  }
  const std::string mps = dir.path() + "/model.mps";
  const std::string start_file = dir.path() + "/start.sol";
  const std::string options = dir.path() + "/options.txt";
  const std::string solution = dir.path() + "/solution.sol";
  {
    std::ofstream out(mps);
    WriteMps(model, out);
    if (start) {
      std::ofstream s(start_file);
      WriteHighsStart(model, *start, s);
    }
    // The objective takes integer values (costs over their gcd), so only a
    // gap of 0 proves the optimum CBC would prove; HiGHS stops at 0.01% by
    // default. A fixed seed makes runs repeat. HiGHS writes Highs.log into
    // its working folder unless told otherwise: here, into the temporary
    // one (the child also starts there).
    std::ofstream o(options);
    o << "mip_rel_gap = 0\nrandom_seed = 0\nlog_file = " << dir.path()
      << "/highs.log\n";
    if (!out || !o) {
      run.error =
          fmt::format("cannot write the model for HiGHS in {}", dir.path());
      return run;
    }
  }
  std::vector<std::string> args = {*highs,
                                   "--model_file",
                                   mps,
                                   "--options_file",
                                   options,
                                   "--solution_file",
                                   solution,
                                   "--time_limit",
                                   fmt::format("{}", std::max(seconds, 0.01)),
                                   "--threads",
                                   std::to_string(threads)};
  if (start) {
    args.push_back("--read_solution_file");
    args.push_back(start_file);
  }
  // highsbox's executable looks for libhighs.so beside itself and in
  // ../lib64, but the wheel has it in ../lib.
  const std::string lib =
      std::filesystem::path(*highs).parent_path().parent_path() / "lib";
  std::string library_path = "LD_LIBRARY_PATH=" + lib;
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) {
    library_path += std::string(":") + old;
  }
  const ChildRun child =
      RunChild("HiGHS", std::move(args), {library_path}, dir.path(), seconds);
  if (!child.error.empty()) {
    run.error = child.error;
    return run;
  }
  const std::string& log_text = child.log;
  if (log_text.find("Parser reached timeout") != std::string::npos) {
    // Its time limit ran out while it read the model (exit status 255,
    // "Error loading file"): no answer within the limit, as when it stops
    // while solving.
    run.model_status = "Time limit reached";
    return run;
  }
  if (child.exit_status != 0) {
    // The last line of its log says why (a missing library, a bad file).
    run.error = fmt::format("{} exited with status {}: {}", *highs,
                            child.exit_status, LastLine(log_text));
    return run;
  }
  std::ifstream sol(solution);
  if (!sol) {
    run.error = "HiGHS wrote no solution file";
    return run;
  }
  try {
    HighsSolution read = ReadHighsSolution(sol, model.num_cols());
    run.model_status = std::move(read.model_status);
    run.x = std::move(read.x);
  } catch (const std::exception& e) {
    run.error = fmt::format("unreadable HiGHS solution: {}", e.what());
    return run;
  }
  run.bound = ReportValue(log_text, "Dual bound");
  return run;
}

}  // namespace remat
