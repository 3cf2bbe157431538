// remat — the rematbench command line (DESIGN.md section 3).
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/output.h"
#include "harness/errors.h"
#include "harness/isolation.h"

int main(int argc, char** argv) {
  remat::InitIsolation(argc, argv);
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
  int exit_code = kExitOk;
  AddListCommand(app, exit_code);
  AddGraphCommand(app, exit_code);
  AddSolveCommand(app, exit_code);
  AddValidateCommand(app, exit_code);
  AddSweepCommand(app, exit_code);
  AddMergeCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  } catch (const remat::InputError& e) {
    std::cerr << "remat: " << e.what() << "\n";
    return kExitBadInput;
  }
  return exit_code;
}
