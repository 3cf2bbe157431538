// Output helpers shared by the subcommands: every subcommand prints either
// one JSON object (--json) or the same fields as an aligned human table.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

namespace remat::cli {

using Json = nlohmann::ordered_json;

// Exit statuses (docs/cli.md, "Conventions").
inline constexpr int kExitOk = 0;
inline constexpr int kExitNegative = 1;  // invalid schedule, infeasible
inline constexpr int kExitBadInput = 2;  // bad usage or bad input

// Adds the --json flag every subcommand has.
std::shared_ptr<bool> AddJsonFlag(CLI::App* command);

// The command line of this run, as typed, for the results' context.
std::string& CommandLine();

// Prints `object` as JSON, or as "key  value" lines; fields named *_bytes
// get a readable size beside the number.
void Print(const Json& object, bool as_json);

}  // namespace remat::cli
