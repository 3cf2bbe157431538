#include "model/schedule.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>

#include "model/errors.h"
#include "model/file_io.h"
#include "model/stop.h"

namespace remat {

namespace {

constexpr char kLetters[] = {'c', 'f', 'o', 'p', 'w'};  // Event::Op's order

std::string_view Trim(std::string_view s) {
  const char* spaces = " \t\r";
  size_t begin = s.find_first_not_of(spaces);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(spaces);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

Schedule ParseScheduleText(std::istream& in, const std::string& source,
                           int32_t num_nodes,
                           std::vector<int64_t>* event_lines) {
  Schedule schedule;
  std::string line;
  int64_t line_number = 0;
  // A schedule of millions of events takes seconds to read, so a stop
  // (model/stop.h) is looked for as it goes.
  StopPoll stop;
  while (std::getline(in, line)) {
    stop.Tick();
    ++line_number;
    std::string_view text = Trim(line);
    if (text.empty() || text.front() == '#') continue;
    auto fail = [&](const std::string& what) {
      throw InputError(fmt::format("{}:{}: {}: '{}'", source, line_number, what,
                                   Printable(text, 80)));
    };
    const std::optional<Event::Op> op = OpFromLetter(text[0]);
    if (text.size() < 3 || !op || (text[1] != ' ' && text[1] != '\t')) {
      fail("expected 'c <id>', 'f <id>', 'o <id>', 'p <id>' or 'w <id>'");
    }
    std::string_view number = Trim(text.substr(2));
    int64_t id = -1;
    auto [end, ec] =
        std::from_chars(number.data(), number.data() + number.size(), id);
    if (ec != std::errc() || end != number.data() + number.size()) {
      fail("node id is not an integer");
    }
    if (id < 0 || id >= num_nodes) {
      fail(fmt::format("node {} is not in the graph (ids 0..{})", id,
                       num_nodes - 1));
    }
    schedule.push_back({*op, static_cast<NodeId>(id)});
    if (event_lines != nullptr) event_lines->push_back(line_number);
  }
  if (in.bad()) throw InputError(fmt::format("{}: read error", source));
  return schedule;
}

Schedule ReadScheduleFile(const std::string& path, int32_t num_nodes,
                          std::vector<int64_t>* event_lines) {
  // Each event takes at least 4 bytes of text ("c 1\n") and 8 in memory,
  // 16 with its line number.
  std::ifstream in = OpenSizedFile(path, 4, "of schedule text");
  return ParseScheduleText(in, path, num_nodes, event_lines);
}

void WriteScheduleText(std::ostream& out, const Schedule& schedule) {
  std::string buffer;
  buffer.reserve(schedule.size() * 8);
  for (const Event& e : schedule) {
    buffer += OpLetter(e.op);
    buffer += ' ';
    buffer += std::to_string(e.node);
    buffer += '\n';
  }
  out << buffer;
}

char OpLetter(Event::Op op) { return kLetters[static_cast<size_t>(op)]; }

std::optional<Event::Op> OpFromLetter(char letter) {
  for (size_t i = 0; i < sizeof(kLetters); ++i) {
    if (kLetters[i] == letter) return static_cast<Event::Op>(i);
  }
  return std::nullopt;
}


}  // namespace remat
