// The journal of a sweep, so that a killed sweep loses nothing: a header
// line (the configuration and the graphs) and one JSON line per finished
// task (its key and its points), appended in order and fsynced, so that
// after a SIGKILL or a crash at any moment only the last line can be
// incomplete. A writer thread of its own appends and syncs whatever tasks
// finished since its last sync in one go (group commit): at one fsync per
// task (about 4 ms on a plain disk) the journal, not the solves, would
// bound a sweep of small tasks. results/SCHEMA.md has the format.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace remat {

struct JournalContents {
  nlohmann::json header;  // format, version, configuration, graphs
  std::vector<std::pair<nlohmann::json, nlohmann::json>>
      entries;             // key, points
  size_t valid_bytes = 0;  // up to the end of the last complete line
};

// Whether a parsed first line is a journal's header ("format" says so).
bool IsJournalHeader(const nlohmann::json& line);

// Reads a journal. A last line cut short (no newline, or not JSON: what a
// killed writer leaves) is ignored with a note on stderr; any other bad
// line, and any entry or header whose fields lack their types (a point
// without budget_bytes, "points": [5]), is an InputError naming the file
// and line.
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
  // truncated last line is cut off before appending. One sweep at a time
  // owns a journal: it holds "<path>.lock" (flock) from here to its
  // destruction, and a second sweep on the same path is refused
  // (InputError) before it reads or replaces anything.
  SweepJournal(const std::string& path, const nlohmann::json& configuration,
               const nlohmann::json& graphs, bool resume);
  ~SweepJournal();
  SweepJournal(const SweepJournal&) = delete;
  SweepJournal& operator=(const SweepJournal&) = delete;

  // The points of a task finished in an earlier run, or null.
  const nlohmann::json* Find(const nlohmann::json& key) const;
  // Queues a finished task for the writer; InputError if an earlier write
  // failed.
  void Append(const nlohmann::json& key, const nlohmann::json& points);
  // Waits until every queued task is written and synced; InputError if a
  // write failed.
  void Flush();

 private:
  // An exclusive flock on "<journal>.lock", removed when released.
  class Lock {
   public:
    explicit Lock(const std::string& journal);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    std::string path_;
    int fd_ = -1;
  };

  void Write();  // the writer thread

  std::string path_;
  Lock lock_;  // before anything reads or writes the journal
  int fd_ = -1;
  std::map<std::string, nlohmann::json> finished_;  // DumpJson(key) -> points
  std::mutex mutex_;
  std::condition_variable queued_, synced_;
  std::string pending_;  // lines not yet written
  bool writing_ = false, closing_ = false;
  std::string error_;  // of a failed write, reported by Append and Flush
  std::thread writer_;
};

}  // namespace remat
