// The journal of a sweep, so that a killed sweep loses nothing: a header
// line (the configuration and the graphs) and one JSON line per finished
// task (its key and its points), each written with one write() and
// fsynced before the next, so that after a SIGKILL or a crash at any moment
// only the last line can be incomplete. results/SCHEMA.md has the format.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace remat {

struct JournalContents {
  nlohmann::json header;  // format, version, configuration, graphs
  std::vector<std::pair<nlohmann::json, nlohmann::json>>
      entries;             // key, points
  size_t valid_bytes = 0;  // up to the end of the last complete line
};

// Reads a journal. A truncated or corrupt last line (what a killed writer
// leaves) is ignored with a note on stderr; any other bad line is an
// InputError naming the file and line.
JournalContents ReadJournal(const std::string& path);

// Throws InputError "<what>: from another configuration (<field> differs
// ...)" unless `found` equals `expected`.
void CheckSameConfiguration(const nlohmann::json& expected,
                            const nlohmann::json& found,
                            const std::string& what);

class SweepJournal {
 public:
  // Starts a new journal at `path` (replacing any), or with `resume`
  // continues the one there: it must be of the same configuration, and a
  // truncated last line is cut off before appending.
  SweepJournal(const std::string& path, const nlohmann::json& configuration,
               const nlohmann::json& graphs, bool resume);
  ~SweepJournal();
  SweepJournal(const SweepJournal&) = delete;
  SweepJournal& operator=(const SweepJournal&) = delete;

  // The points of a task finished in an earlier run, or null.
  const nlohmann::json* Find(const nlohmann::json& key) const;
  // Appends a finished task and fsyncs; InputError if it cannot.
  void Append(const nlohmann::json& key, const nlohmann::json& points);

 private:
  std::string path_;
  int fd_ = -1;
  std::map<std::string, nlohmann::json> finished_;  // key.dump() -> points
};

}  // namespace remat
