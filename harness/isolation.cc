#include "harness/isolation.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
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
#include <vector>

#include "harness/graph_json.h"
#include "harness/runner.h"
#include "harness/schedule.h"

extern char** environ;

namespace remat {
namespace {

std::atomic<bool> isolation_enabled{false};

// How long a child may run past its time limit before it is killed. CBC
// does not look at the clock during its root node: with a 10 s limit on a
// 50,000-column model it returned its schedule after 29 s on a loaded
// machine. The kill is for children that would run on for many times the
// limit (CBC's preprocessing), not for those.
double GraceSeconds(double timeout_seconds) { return 30 + timeout_seconds; }

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

[[noreturn]] void RunChild() {
  int code = 0;
  try {
    const nlohmann::json request = nlohmann::json::parse(ReadStdin());
    const AlgorithmInfo& info =
        FindAlgorithm(request.at("algorithm").get<std::string>());
    const Params params =
        Params::Parse(request.at("params").get<std::vector<std::string>>(),
                      info.params, info.name);
    const Graph graph =
        ParseGraphJson(request.at("graph").get<std::string>(), "request");
    const Attempt attempt = RunAlgorithm(
        graph, info, params, request.at("budget_bytes").get<int64_t>(),
        request.at("timeout_seconds").get<double>());
    std::cout << OutputToJson(attempt.output).dump() << std::flush;
  } catch (const std::exception& e) {
    std::cerr << "remat (isolated process): " << e.what() << "\n";
    code = 3;
  }
  // No static destructors: a library that misbehaved may have left its
  // process-wide state broken, and the answer is already written.
  std::_Exit(code);
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

// Reads until end of file; false if `kill_at` came first.
bool ReadAll(int fd, std::chrono::steady_clock::time_point kill_at,
             std::string& out) {
  char buffer[1 << 16];
  for (;;) {
    int wait_ms = -1;
    if (kill_at != std::chrono::steady_clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          kill_at - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return false;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

void InitIsolation(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == kIsolatedSolveFlag) RunChild();
  isolation_enabled = true;
}

bool IsolationEnabled() { return isolation_enabled; }

AlgorithmOutput RunIsolated(const Graph& graph, const AlgorithmInfo& algorithm,
                            const Params& params, int64_t budget_bytes,
                            double timeout_seconds) {
  std::ostringstream graph_text;
  WriteGraphJson(graph_text, graph);
  std::vector<std::string> items;
  for (const auto& [key, value] : params.given()) {
    items.push_back(key + "=" + value);
  }
  const std::string request = nlohmann::json{
      {"algorithm", algorithm.name},
      {"params", items},
      {"budget_bytes", budget_bytes},
      {"timeout_seconds", timeout_seconds},
      {"graph", graph_text.str()}}.dump();

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
  const char* self = "/proc/self/exe";
  char* argv[] = {const_cast<char*>(self),
                  const_cast<char*>(kIsolatedSolveFlag), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self, &actions, nullptr, argv, environ);
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
      timeout_seconds > 0
          ? std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(
                        timeout_seconds + GraceSeconds(timeout_seconds)))
          : std::chrono::steady_clock::time_point::max();
  std::string reply;
  const bool answered = ReadAll(fds[0], kill_at, reply);
  if (!answered) kill(pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!answered) {
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout,
        fmt::format("killed {:.1f} s after its time limit (it did not stop "
                    "by itself); no schedule",
                    GraceSeconds(timeout_seconds)));
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
