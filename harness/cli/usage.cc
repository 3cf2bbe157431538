#include "harness/cli/usage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <iostream>
#include <vector>

#include "harness/cli/output.h"
#include "harness/option_limits.h"
#include "model/errors.h"

namespace remat::cli {

namespace {

// "remat graph info": the chain of subcommands parsed so far.
std::string CommandPath(const CLI::App& app) {
  std::string path = app.get_name();
  const CLI::App* command = &app;
  while (true) {
    std::vector<const CLI::App*> parsed = command->get_subcommands(
        [](const CLI::App* sub) { return sub->parsed(); });
    if (parsed.empty()) return path;
    command = parsed.front();
    path += " " + command->get_name();
  }
}

}  // namespace

CLI::Validator PositiveNumber(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec != std::errc() || ptr != end || !IsTimeLimit(value)) {
          return fmt::format("must be a number of {} > 0 (got '{}')", what,
                             Printable(text, 40));
        }
        return {};
      },
      "NUMBER>0");
}

CLI::Validator TimeLimit() {
  return PositiveNumber("seconds").description("SECONDS>0");
}

std::string UnknownSubcommand(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  std::string path = app.get_name();
  for (int i = 1; i < argc; ++i) {
    std::vector<const CLI::App*> subs =
        command->get_subcommands([](const CLI::App*) { return true; });
    const std::string word = argv[i];
    if (subs.empty() || word.empty() || word[0] == '-') return {};
    const CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* sub : subs) {
      names.push_back(sub->get_name());
      if (sub->check_name(word)) next = sub;
    }
    if (next == nullptr) {
      return fmt::format("{}: unknown subcommand '{}' (known: {})", path,
                         Printable(word, 60), fmt::join(names, ", "));
    }
    command = next;
    path += " " + next->get_name();
  }
  return {};
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& error) {
  const std::string path = CommandPath(app);
  std::string what = error.what();
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) {
    what.pop_back();
  }
  std::cerr << fmt::format("{}: {} (see {} --help)\n", path,
                           Printable(what, 300), path);
  return kExitBadInput;
}

}  // namespace remat::cli
