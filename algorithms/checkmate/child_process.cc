// Runs a solver's program as a child process (child_process.h).
#include "algorithms/checkmate/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "model/stop.h"

extern char** environ;

namespace remat {

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

ChildRun RunChild(const std::string& what, std::vector<std::string> args,
                  const std::vector<std::string>& env_extra,
                  const std::string& dir, double seconds) {
  ChildRun run;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(
            env_extra.begin(), env_extra.end(),
            [&](const std::string& x) { return x.starts_with(name); })) {
      env_text.push_back(*e);
    }
  }
  env_text.insert(env_text.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string log = dir + "/log.txt";
  const int log_fd =
      open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    run.error = fmt::format("cannot write {}'s log: {}", what, strerror(errno));
    return run;
  }
  const pid_t parent = getpid();
  // fork, not posix_spawn, to set the parent-death signal: a solve whose
  // watchdog ends the isolated process must not leave the solver running.
  // Between fork and exec only async-signal-safe calls.
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (chdir(dir.c_str()) != 0) _exit(127);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(log_fd);
  if (pid < 0) {
    run.error = fmt::format("cannot start {}: {}", what, strerror(errno));
    return run;
  }
  // A solve without a time limit asks for 1e18 s, whose nanoseconds would
  // overflow the clock and kill the child at once.
  const auto kill_at =
      seconds < kNoLimitSeconds
          ? std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(seconds +
                                                  std::max(5.0, 0.1 * seconds)))
          : std::chrono::steady_clock::time_point::max();
  int status = 0;
  bool killed = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      run.error = fmt::format("lost the {} process: {}", what, strerror(errno));
      return run;
    }
    if (!killed &&
        (std::chrono::steady_clock::now() > kill_at || StopRequested())) {
      kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream log_in(log);
  run.log.assign(std::istreambuf_iterator<char>(log_in),
                 std::istreambuf_iterator<char>());
  if (killed) {
    run.error = fmt::format("{} ran past its {:.1f} s limit and was killed",
                            what, seconds);
  } else if (WIFSIGNALED(status)) {
    run.error = fmt::format("{} crashed (signal {})", what, WTERMSIG(status));
  } else {
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return run;
}

std::string LastLine(const std::string& log) {
  std::string last;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace remat
