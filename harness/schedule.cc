#include "harness/schedule.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <istream>
#include <ostream>

#include "harness/errors.h"

namespace remat {

namespace {

std::string_view Trim(std::string_view s) {
  const char* spaces = " \t\r";
  size_t begin = s.find_first_not_of(spaces);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(spaces);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

Schedule ParseScheduleText(std::istream& in, const std::string& source,
                           int32_t num_nodes) {
  Schedule schedule;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::string_view text = Trim(line);
    if (text.empty() || text.front() == '#') continue;
    auto fail = [&](const std::string& what) {
      throw InputError(fmt::format("{}:{}: {}: '{}'", source, line_number,
                                   what, text));
    };
    if (text.size() < 3 || (text[0] != 'c' && text[0] != 'f') ||
        (text[1] != ' ' && text[1] != '\t')) {
      fail("expected 'c <id>' or 'f <id>'");
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
    schedule.push_back(text[0] == 'c' ? Event::Compute(static_cast<NodeId>(id))
                                      : Event::Free(static_cast<NodeId>(id)));
  }
  if (in.bad()) throw InputError(fmt::format("{}: read error", source));
  return schedule;
}

Schedule ReadScheduleFile(const std::string& path, int32_t num_nodes) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open file", path));
  return ParseScheduleText(in, path, num_nodes);
}

void WriteScheduleText(std::ostream& out, const Schedule& schedule) {
  std::string buffer;
  buffer.reserve(schedule.size() * 8);
  for (const Event& e : schedule) {
    buffer += e.op == Event::Op::kCompute ? "c " : "f ";
    buffer += std::to_string(e.node);
    buffer += '\n';
  }
  out << buffer;
}

}  // namespace remat
