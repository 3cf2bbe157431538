// remat — the rematbench command line (docs/cli.md).
#include <signal.h>

#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/output.h"
#include "harness/cli/usage.h"
#include "harness/isolation.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/limits.h"
#include "model/params.h"

namespace {

int Run(int argc, char** argv) {
  using namespace remat::cli;
  CLI::App app{
      "rematbench: rematerialization (gradient checkpointing) algorithms on "
      "training graphs, judged by one memory simulator.\n"
      "A <graph> is a file (native JSON or an imported format) or a "
      "generator spec such as chain:n=16. Budgets take units: 512MiB, 8GB.\n"
      "Exit status: 0 success, 1 a negative answer (invalid schedule, "
      "infeasible budget), 2 bad usage or bad input.",
      "remat"};
  for (int i = 0; i < argc; ++i) {
    CommandLine() += (i > 0 ? " " : "") + std::string(argv[i]);
  }
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option_function<std::string>(
         "--max-memory",
         [](const std::string& bytes) {
           remat::SetMemoryLimit(
               std::max<int64_t>(1, remat::ParseBytes(bytes, "--max-memory")));
         },
         "refuse graphs and files whose estimated memory exceeds this "
         "(default: MemAvailable of /proc/meminfo)")
      ->type_name("BYTES");
  int exit_code = kExitOk;
  AddListCommand(app, exit_code);
  AddGraphCommand(app, exit_code);
  AddSolveCommand(app, exit_code);
  AddValidateCommand(app, exit_code);
  AddSweepCommand(app, exit_code);
  AddMergeCommand(app, exit_code);
  if (std::string unknown = UnknownSubcommand(app, argc, argv);
      !unknown.empty()) {
    std::cerr << unknown << "\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  } catch (const remat::InputError& e) {
    // Messages quote the user's input, which may hold any bytes.
    std::cerr << "remat: " << remat::Printable(e.what(), 2000) << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << remat::kOutOfMemoryLine << "\n";
    return kExitBadInput;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  remat::ExitOnUncaughtOutOfMemory();
  remat::InitIsolation(argc, argv);
  // Past a file size limit (ulimit -f) a write fails with EFBIG, which is
  // reported in one line, instead of killing the process mid-write.
  signal(SIGXFSZ, SIG_IGN);
  remat::CheckStdoutWrites();
  int status = Run(argc, argv);
  if (const std::string error = remat::FinishStdout(); !error.empty()) {
    std::cerr << "remat: " << error << "\n";
    status = remat::cli::kExitBadInput;
  }
  return status;
}
