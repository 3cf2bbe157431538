// One-line usage errors: CLI11's messages (two lines, no subcommand named)
// rewritten as "remat <subcommand>: <problem>", and validators for the
// numeric options shared by the subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace remat::cli {

// Accepts a number of seconds > 0 and finite ("nan", "inf", 0 and
// negative values are refused with one line).
CLI::Validator TimeLimit();

// Accepts a finite number > 0; the message names what it counts.
CLI::Validator PositiveNumber(const std::string& what);

// The first word of `argv` that names no subcommand where one is expected
// ("remat frobnicate", "remat graph frob"), as a one-line error; empty if
// every such word names one.
std::string UnknownSubcommand(const CLI::App& app, int argc, char** argv);

// Prints `error` as one line on stderr naming the deepest subcommand that
// was parsed, and returns the exit status (2).
int ReportParseError(const CLI::App& app, const CLI::ParseError& error);

}  // namespace remat::cli
