#include "harness/sweep_journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "harness/sweep.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/json_text.h"

namespace remat {

namespace {

constexpr char kJournalFormat[] = "rematbench-journal";

// Why a parsed line is not a task's entry, or "" when it is.
std::string EntryProblem(const nlohmann::json& line) {
  if (line.is_discarded()) return "not valid JSON";
  if (!line.is_object() || !line.contains("key") || !line.contains("points") ||
      !line["points"].is_array()) {
    return "not a JSON object with \"key\" and \"points\"";
  }
  if (std::string problem = KeyProblem(line["key"]); !problem.empty()) {
    return problem;
  }
  const nlohmann::json& points = line["points"];
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::string problem = PointProblem(points[i]); !problem.empty()) {
      return fmt::format("points[{}]: {}", i, problem);
    }
  }
  return "";
}

}  // namespace

bool IsJournalHeader(const nlohmann::json& line) {
  return line.is_object() && line.contains("format") &&
         line["format"] == kJournalFormat;
}

JournalContents ReadJournal(const std::string& path) {
  const std::string text = ReadFile(path);
  JournalContents contents;
  size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    const size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    const bool last = !complete || end + 1 == text.size();
    nlohmann::json line = ParseJsonLine(std::string_view(text).substr(
        start, complete ? end - start : std::string_view::npos));
    if (line_number == 1) {
      if (!complete || !IsJournalHeader(line) ||
          !line.contains("configuration") || !line.contains("graphs")) {
        throw InputError(fmt::format(
            "{}:1: not a rematbench journal (a header line with \"format\": "
            "\"{}\", \"configuration\" and \"graphs\")",
            path, kJournalFormat));
      }
      for (const std::string& problem :
           {ConfigurationProblem(line["configuration"]),
            GraphsProblem(line["graphs"])}) {
        if (!problem.empty()) {
          throw InputError(
              fmt::format("{}:1: corrupt journal header: {}", path, problem));
        }
      }
      contents.header = std::move(line);
    } else if (std::string problem = EntryProblem(line);
               !complete || !problem.empty()) {
      // A killed writer leaves a last line cut short: without its newline,
      // or not JSON. A whole line of JSON that is no entry was written so.
      if (!last || (complete && !line.is_discarded())) {
        throw InputError(fmt::format("{}:{}: corrupt journal line: {}", path,
                                     line_number,
                                     problem.empty() ? "no newline" : problem));
      }
      std::cerr << fmt::format(
          "remat: {}:{}: ignoring the incomplete last line (the end of an "
          "interrupted run)\n",
          path, line_number);
      break;
    } else {
      contents.entries.emplace_back(std::move(line["key"]),
                                    std::move(line["points"]));
    }
    start = end + 1;
    contents.valid_bytes = start;
  }
  if (contents.header.is_null()) {
    throw InputError(fmt::format("{}: empty journal", path));
  }
  return contents;
}

void CheckSameConfiguration(const nlohmann::json& expected_here,
                            const nlohmann::json& found,
                            const std::string& what) {
  // As written: a name that is not UTF-8 was written with U+FFFD.
  const nlohmann::json expected =
      nlohmann::json::parse(DumpJson(expected_here));
  if (found == expected) return;
  std::string field = "its form";
  if (found.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      if (!found.contains(key) || found[key] != value) {
        field = key;
        break;
      }
    }
  }
  std::string detail;
  if (field != "its form" && expected[field].is_primitive()) {
    detail = fmt::format(": {} here, {} there", DescribeJson(expected[field]),
                         DescribeJson(found.value(field, nlohmann::json())));
  }
  throw InputError(fmt::format("{}: from another configuration ({} differs{})",
                               what, field, detail));
}

SweepJournal::Lock::Lock(const std::string& journal)
    : path_(journal + ".lock") {
  // The lock file is removed on release, so a file opened just before that
  // may be locked after it: the lock holds only if the name still names
  // the locked file.
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      throw InputError(fmt::format("{}: cannot create the journal's lock ({})",
                                   path_, std::strerror(errno)));
    }
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      close(fd_);
      fd_ = -1;
      if (error == EWOULDBLOCK) {
        throw InputError(fmt::format(
            "{}: in use by another sweep (it holds {}); wait for it to end, "
            "or give this one another --out or --journal",
            journal, path_));
      }
      throw InputError(
          fmt::format("{}: cannot lock ({})", path_, std::strerror(error)));
    }
    struct stat held, named;
    if (fstat(fd_, &held) == 0 && stat(path_.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      return;
    }
    close(fd_);
    fd_ = -1;
  }
  throw InputError(
      fmt::format("{}: cannot lock (it keeps being replaced)", path_));
}

SweepJournal::Lock::~Lock() {
  unlink(path_.c_str());  // while held: no other sweep holds this file
  close(fd_);
}

SweepJournal::SweepJournal(const std::string& path,
                           const nlohmann::json& configuration,
                           const nlohmann::json& graphs, bool resume)
    : path_(path), lock_(path) {
  namespace fs = std::filesystem;
  // A run killed while it wrote the journal's header left
  // "<journal>.tmp.<pid>"; this one holds the lock, so no other is writing.
  RemoveStaleTemporaries(path);
  std::error_code error;  // a name the system refuses fails at the write
  const bool exists = fs::exists(path, error);
  if (resume && exists) {
    JournalContents contents = ReadJournal(path);
    try {
      CheckSameConfiguration(configuration, contents.header["configuration"],
                             path);
    } catch (const InputError& e) {
      throw InputError(fmt::format(
          "{}; resume it with the same command, or run without --resume to "
          "start anew",
          e.what()));
    }
    for (auto& [key, points] : contents.entries) {
      finished_.emplace(DumpJson(key), std::move(points));
    }
    // Cut off an incomplete last line, so that the next one starts clean.
    if (contents.valid_bytes < fs::file_size(path)) {
      fs::resize_file(path, contents.valid_bytes);
    }
  } else {
    if (resume) {
      std::cerr << fmt::format(
          "remat: {}: no journal yet; starting from the beginning\n", path);
    }
    const nlohmann::json header = {{"format", kJournalFormat},
                                   {"version", 1},
                                   {"configuration", configuration},
                                   {"graphs", graphs}};
    WriteFileAtomically(
        path, [&](std::ostream& out) { out << DumpJson(header) << "\n"; });
  }
  fd_ = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) {
    throw InputError(fmt::format("{}: cannot open the journal ({})", path,
                                 std::strerror(errno)));
  }
  writer_ = std::thread([this] { Write(); });
}

SweepJournal::~SweepJournal() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  queued_.notify_all();
  writer_.join();
  close(fd_);
}

const nlohmann::json* SweepJournal::Find(const nlohmann::json& key) const {
  auto it = finished_.find(DumpJson(key));
  return it == finished_.end() ? nullptr : &it->second;
}

void SweepJournal::Append(const nlohmann::json& key,
                          const nlohmann::json& points) {
  const std::string line =
      DumpJson(nlohmann::json{{"key", key}, {"points", points}}) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.empty()) throw InputError(error_);
  pending_ += line;
  queued_.notify_one();
}

void SweepJournal::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  synced_.wait(lock, [this] {
    return (pending_.empty() && !writing_) || !error_.empty();
  });
  if (!error_.empty()) throw InputError(error_);
}

void SweepJournal::Write() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    queued_.wait(lock, [this] { return closing_ || !pending_.empty(); });
    if (pending_.empty() || !error_.empty()) return;
    std::string lines;
    lines.swap(pending_);
    writing_ = true;
    lock.unlock();
    std::string error;
    for (size_t written = 0; written < lines.size() && error.empty();) {
      const ssize_t n =
          write(fd_, lines.data() + written, lines.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = fmt::format("{}: cannot write the journal ({})", path_,
                            std::strerror(errno));
      } else {
        written += n;
      }
    }
    if (error.empty() && fdatasync(fd_) != 0) {
      error = fmt::format("{}: cannot sync the journal ({})", path_,
                          std::strerror(errno));
    }
    lock.lock();
    writing_ = false;
    error_ = error;
    synced_.notify_all();
  }
}

}  // namespace remat
