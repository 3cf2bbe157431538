// Runs the `highs` executable on a staged model (highs_process.h).
#include "algorithms/checkmate/highs_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "algorithms/checkmate/milp_files.h"

extern char** environ;

namespace remat {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

// Removes the temporary folder however the solve ends.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/remat-highs-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
  TempDir dir;
  if (dir.path().empty()) {
    run.error = fmt::format("cannot create a temporary folder for HiGHS: {}",
                            strerror(errno));
    return run;
  }
  const std::string mps = dir.path() + "/model.mps";
  const std::string start_file = dir.path() + "/start.sol";
  const std::string options = dir.path() + "/options.txt";
  const std::string solution = dir.path() + "/solution.sol";
  const std::string log = dir.path() + "/log.txt";
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
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // highsbox's executable looks for libhighs.so beside itself and in
  // ../lib64, but the wheel has it in ../lib.
  std::vector<std::string> env_text;
  const std::string lib =
      std::filesystem::path(*highs).parent_path().parent_path() / "lib";
  std::string library_path = "LD_LIBRARY_PATH=" + lib;
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) {
    library_path += std::string(":") + old;
  }
  for (char** e = environ; *e; ++e) {
    if (strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0) env_text.push_back(*e);
  }
  env_text.push_back(library_path);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd =
      open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    run.error = fmt::format("cannot write HiGHS's log: {}", strerror(errno));
    return run;
  }
  const pid_t parent = getpid();
  // fork, not posix_spawn, to set the parent-death signal: a solve whose
  // watchdog ends the isolated process must not leave HiGHS running.
  // Between fork and exec only async-signal-safe calls.
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (chdir(dir.path().c_str()) != 0) _exit(127);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(log_fd);
  if (pid < 0) {
    run.error = fmt::format("cannot start HiGHS: {}", strerror(errno));
    return run;
  }
  const auto kill_at =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds +
                                        std::max(5.0, 0.1 * seconds)));
  int status = 0;
  bool killed = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      run.error = fmt::format("lost the HiGHS process: {}", strerror(errno));
      return run;
    }
    if (!killed && std::chrono::steady_clock::now() > kill_at) {
      kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream log_in(log);
  const std::string log_text((std::istreambuf_iterator<char>(log_in)),
                             std::istreambuf_iterator<char>());
  if (killed) {
    run.error = fmt::format("HiGHS ran past its {:.1f} s limit and was killed",
                            seconds);
    return run;
  }
  if (WIFSIGNALED(status)) {
    run.error = fmt::format("HiGHS crashed (signal {})", WTERMSIG(status));
    return run;
  }
  if (log_text.find("Parser reached timeout") != std::string::npos) {
    // Its time limit ran out while it read the model (exit status 255,
    // "Error loading file"): no answer within the limit, as when it stops
    // while solving.
    run.model_status = "Time limit reached";
    return run;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The last line of its log says why (a missing library, a bad file).
    std::string last;
    std::istringstream lines(log_text);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) last = line;
    }
    run.error = fmt::format("{} exited with status {}: {}", *highs,
                            WEXITSTATUS(status), last);
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
