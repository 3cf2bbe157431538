#include "harness/isolation.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/runner.h"
#include "model/graph_json.h"
#include "model/json_text.h"
#include "model/limits.h"
#include "model/schedule.h"
#include "model/stop.h"

extern char** environ;

namespace remat {
namespace {

std::atomic<bool> isolation_enabled{false};

// The command that starts an isolated solve, before kIsolatedSolveFlag and
// the parent's pid; set before isolation_enabled.
std::vector<std::string>& ChildCommand() {
  static std::vector<std::string> command = {"/proc/self/exe"};
  return command;
}

// How long past its time limit an isolated solve may run before its
// watchdog answers with the algorithm's standby answer (StandbyAnswer):
// libraries such as CBC do not look at the clock in their root node (a
// 10 s limit became 50 s on ResNet-18). Within the bound every time-limited
// solve must keep: its limit plus 10% or 5 s, whichever is larger.
double WatchdogGraceSeconds(double timeout_seconds) {
  return std::max(2.0, 0.05 * timeout_seconds);
}

// The parent kills a child that has not answered by then (its watchdog
// could not run: the process is stuck outside user code).
double KillGraceSeconds(double timeout_seconds) {
  return 2 * WatchdogGraceSeconds(timeout_seconds) + 1;
}

nlohmann::json OutputToJson(const AlgorithmOutput& output) {
  nlohmann::json reply = {{"status", StatusName(output.status)},
                          {"message", output.message},
                          {"optimal", output.optimal},
                          {"extra", output.extra}};
  if (output.schedule) {
    std::ostringstream text;
    WriteScheduleText(text, *output.schedule);
    reply["schedule"] = text.str();
  }
  if (output.lower_bound_cost) {
    reply["lower_bound_cost"] = *output.lower_bound_cost;
  }
  if (output.staged_lower_bound_cost) {
    reply["staged_lower_bound_cost"] = *output.staged_lower_bound_cost;
  }
  return reply;
}

AlgorithmOutput OutputFromJson(const nlohmann::json& reply,
                               const Graph& graph) {
  const std::optional<Status> status =
      StatusFromName(reply.at("status").get<std::string>());
  if (!status) throw std::runtime_error("unknown status");
  AlgorithmOutput output;
  output.status = *status;
  output.message = reply.at("message").get<std::string>();
  output.optimal = reply.at("optimal").get<bool>();
  output.extra = reply.at("extra");
  if (reply.contains("schedule")) {
    std::istringstream text(reply["schedule"].get<std::string>());
    output.schedule =
        ParseScheduleText(text, "isolated process", graph.num_nodes());
  }
  if (reply.contains("lower_bound_cost")) {
    output.lower_bound_cost = reply["lower_bound_cost"].get<int64_t>();
  }
  if (reply.contains("staged_lower_bound_cost")) {
    output.staged_lower_bound_cost =
        reply["staged_lower_bound_cost"].get<int64_t>();
  }
  return output;
}

// All of stdin with read(2): iterating over std::cin, which is synced with
// stdio, took minutes on a 100-node graph.
std::string ReadStdin() {
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot read the request");
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

std::atomic<bool> child_answered{false};

// Writes the child's one answer and ends the process; a second caller (the
// solve finishing while the watchdog answers, or the other way round)
// waits for that end. No static destructors: a library that misbehaved may
// have left its process-wide state broken.
[[noreturn]] void AnswerOnce(const AlgorithmOutput& output) {
  if (child_answered.exchange(true)) {
    for (;;) pause();
  }
  std::cout << DumpJson(OutputToJson(output)) << std::flush;
  std::_Exit(0);
}

// Answers with the standby once the deadline is overrun by the grace.
void StartWatchdog(const StandbyAnswer& standby, double timeout_seconds,
                   std::chrono::steady_clock::time_point started) {
  if (timeout_seconds <= 0 || timeout_seconds > 1e9) return;
  const double grace = WatchdogGraceSeconds(timeout_seconds);
  std::thread([&standby, timeout_seconds, started, grace] {
    std::this_thread::sleep_until(
        started +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(timeout_seconds + grace)));
    std::optional<AlgorithmOutput> output = standby.Take();
    if (!output) {
      AnswerOnce(AlgorithmOutput::NoSchedule(
          Status::kTimeout,
          fmt::format("still running {:.1f} s after its time limit, with no "
                      "schedule to stand by; stopped",
                      grace)));
    }
    output->message = fmt::format(
        "still running {:.1f} s after its time limit; stopped, with its "
        "best answer so far: {}",
        grace, output->message);
    AnswerOnce(*output);
  }).detach();
}

[[noreturn]] void RunChild(pid_t parent) {
  // Die with the parent, so that a killed sweep leaves no solver running;
  // the check after it covers a parent that died before.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) std::_Exit(3);
  // Its algorithm runs here, whatever the program enabled before (the
  // Python package enables isolation on import): a child that isolated
  // again would start children without end.
  isolation_enabled = false;
  // The parent stops an isolated solve with SIGTERM (Ctrl-C reaches it as
  // SIGINT from the terminal too): the algorithm ends as at its time limit,
  // and a solver it runs as a program is killed and its temporary folder
  // removed (child_process.h), which SIGKILL would leave behind. The
  // parent kills it if it does not end.
  StopOnSignals(SignalAgain::kStops);
  StandbyAnswer standby;
  try {
    const nlohmann::json request = nlohmann::json::parse(ReadStdin());
    const AlgorithmInfo& info =
        FindAlgorithm(request.at("algorithm").get<std::string>());
    const Params params =
        Params::Parse(request.at("params").get<std::vector<std::string>>(),
                      info.params, info.name);
    const Graph graph =
        ParseGraphJson(request.at("graph").get<std::string>(), "request");
    double timeout_seconds = request.at("timeout_seconds").get<double>();
    // Solvers that size their work (checkmate_lp's LP) check it against
    // the parent's --max-memory.
    if (const int64_t max_memory = request.at("max_memory").get<int64_t>();
        max_memory > 0) {
      SetMemoryLimit(max_memory);
    }
    // The time limit counts from the parent's start of the solve (steady
    // clocks are one clock across the processes of a host): writing,
    // sending and reading a large graph took seconds beyond it.
    using Clock = std::chrono::steady_clock;
    const auto solve_started = Clock::time_point(
        Clock::duration(request.at("started_ticks").get<int64_t>()));
    if (timeout_seconds > 0 && timeout_seconds <= 1e9) {
      const double left =
          timeout_seconds -
          std::chrono::duration<double>(Clock::now() - solve_started).count();
      if (left <= 0) {
        AnswerOnce(AlgorithmOutput::NoSchedule(
            Status::kTimeout,
            "the time limit passed while the graph was handed to the "
            "isolated process"));
      }
      timeout_seconds = left;
    }
    StartWatchdog(standby, timeout_seconds, Clock::now());
    const Attempt attempt = RunAlgorithm(
        graph, info, params, request.at("budget_bytes").get<int64_t>(),
        timeout_seconds, nullptr, &standby);
    AnswerOnce(attempt.output);
  } catch (const std::exception& e) {
    std::cerr << "remat (isolated process): " << e.what() << "\n";
  }
  std::_Exit(3);
}

// Sends all of `data`, or stops early when the child is gone (no SIGPIPE:
// its death is reported from its exit status).
void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// How often a parent waiting for its isolated solve looks for a stop
// (model/stop.h), and how long the child then has to end by itself
// (CBC, in the child's process, does not look at the stop) before it is
// killed.
constexpr auto kStopPoll = std::chrono::milliseconds(50);
constexpr auto kStopGrace = std::chrono::milliseconds(500);

enum class ReadEnd { kEndOfFile, kKillTime, kStopped };

// Reads until end of file, `kill_at`, or (`watch_stop`) a stop.
ReadEnd ReadAll(int fd, std::chrono::steady_clock::time_point kill_at,
                bool watch_stop, std::string& out) {
  char buffer[1 << 16];
  for (;;) {
    if (watch_stop && StopRequested()) return ReadEnd::kStopped;
    const auto now = std::chrono::steady_clock::now();
    if (now >= kill_at) return ReadEnd::kKillTime;
    int64_t wait_ms = watch_stop ? kStopPoll.count() : INT_MAX;
    if (kill_at != std::chrono::steady_clock::time_point::max()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - now);
      wait_ms = std::min<int64_t>(wait_ms, left.count() + 1);
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(wait_ms));
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadEnd::kEndOfFile;
    out.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

void InitIsolation(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == kIsolatedSolveFlag) {
    RunChild(static_cast<pid_t>(std::atoll(argv[2])));
  }
  isolation_enabled = true;
}

void EnableIsolation(std::vector<std::string> command) {
  ChildCommand() = std::move(command);
  isolation_enabled = true;
}

bool IsolationEnabled() { return isolation_enabled; }

AlgorithmOutput RunIsolated(const Graph& graph, const AlgorithmInfo& algorithm,
                            const Params& params, int64_t budget_bytes,
                            double timeout_seconds,
                            std::chrono::steady_clock::time_point started) {
  const bool limited = timeout_seconds > 0 && timeout_seconds <= 1e9;
  const auto deadline =
      limited
          ? started +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(timeout_seconds))
          : std::chrono::steady_clock::time_point::max();
  std::ostringstream graph_text;
  WriteGraphJson(graph_text, graph);
  if (std::chrono::steady_clock::now() >= deadline) {
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout,
        "the time limit passed while the graph was written for the isolated "
        "process");
  }
  std::vector<std::string> items;
  for (const auto& [key, value] : params.given()) {
    items.push_back(key + "=" + value);
  }
  const std::string request = DumpJson(
      nlohmann::json{{"algorithm", algorithm.name},
                     {"params", items},
                     {"budget_bytes", budget_bytes},
                     {"timeout_seconds", timeout_seconds},
                     {"started_ticks", started.time_since_epoch().count()},
                     {"max_memory", GivenMemoryLimit()},
                     {"graph", graph_text.str()}});

  // One socket is the child's stdin and stdout. Close-on-exec keeps it out
  // of children that other threads spawn meanwhile, which would hold it
  // open and delay the end of file.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return AlgorithmOutput::NoSchedule(
        Status::kError,
        fmt::format("could not create a socket: {}", strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::vector<std::string> args = ChildCommand();
  args.push_back(kIsolatedSolveFlag);
  args.push_back(std::to_string(getpid()));
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr,
                                  argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    return AlgorithmOutput::NoSchedule(
        Status::kError, fmt::format("could not start an isolated process: {}",
                                    strerror(spawned)));
  }
  SendAll(fds[0], request);
  shutdown(fds[0], SHUT_WR);
  const auto kill_at =
      limited
          ? deadline +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(
                        KillGraceSeconds(timeout_seconds)))
          : std::chrono::steady_clock::time_point::max();
  std::string reply;
  ReadEnd end = ReadAll(fds[0], kill_at, /*watch_stop=*/true, reply);
  const bool stopped = end == ReadEnd::kStopped;
  if (stopped) {
    kill(pid, SIGTERM);
    end = ReadAll(fds[0], std::chrono::steady_clock::now() + kStopGrace,
                  /*watch_stop=*/false, reply);
  }
  const bool answered = end == ReadEnd::kEndOfFile;
  if (!answered) kill(pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (stopped) {
    return AlgorithmOutput::NoSchedule(Status::kTimeout,
                                       "stopped (interrupted)");
  }
  if (!answered) {
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout,
        fmt::format("killed {:.1f} s after its time limit (neither it nor "
                    "its watchdog stopped it); no schedule",
                    KillGraceSeconds(timeout_seconds)));
  }
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = sigabbrev_np(signal);
    return AlgorithmOutput::NoSchedule(
        Status::kError,
        fmt::format("crashed: its isolated process was killed by signal {} "
                    "(SIG{})",
                    signal, name ? name : "?"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return AlgorithmOutput::NoSchedule(
        Status::kError, fmt::format("its isolated process exited with "
                                    "status {} (see its stderr)",
                                    WEXITSTATUS(status)));
  }
  try {
    return OutputFromJson(nlohmann::json::parse(reply), graph);
  } catch (const std::exception& e) {
    return AlgorithmOutput::NoSchedule(
        Status::kError,
        fmt::format("unreadable answer from its isolated process: {}",
                    e.what()));
  }
}

}  // namespace remat
