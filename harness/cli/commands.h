// The `remat` subcommands. Each Add* function declares one subcommand (its
// options and --help text) on `app`; its callback sets `exit_code`. Errors
// in the user's input are thrown as InputError and reported by main().
#pragma once

#include <CLI/CLI.hpp>

namespace remat::cli {

void AddListCommand(CLI::App& app, int& exit_code);
void AddGraphCommand(CLI::App& app, int& exit_code);
void AddSolveCommand(CLI::App& app, int& exit_code);
void AddValidateCommand(CLI::App& app, int& exit_code);
void AddSweepCommand(CLI::App& app, int& exit_code);
void AddMergeCommand(CLI::App& app, int& exit_code);

}  // namespace remat::cli
