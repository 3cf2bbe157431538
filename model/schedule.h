// A schedule: a sequence of compute and free events (docs/model.md),
// and its text format (`c <id>` / `f <id>`, one per line; blank lines and
// lines starting with '#' are ignored). The format's extension for moving
// values to host memory and back (docs/model.md, "Time and offloading";
// docs/formats.md, "Schedules") adds `o <id>` (offload), `w <id>` (the
// compute stream waits for that offload to end) and `p <id>` (prefetch).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.h"

namespace remat {

struct Event {
  enum class Op : uint8_t { kCompute, kFree, kOffload, kPrefetch, kWait };
  Op op;
  NodeId node;

  static Event Compute(NodeId v) { return {Op::kCompute, v}; }
  static Event Free(NodeId v) { return {Op::kFree, v}; }
  static Event Offload(NodeId v) { return {Op::kOffload, v}; }
  static Event Prefetch(NodeId v) { return {Op::kPrefetch, v}; }
  static Event Wait(NodeId v) { return {Op::kWait, v}; }
  // Offloads, prefetches and waits: the events of the extension.
  bool is_transfer() const { return op >= Op::kOffload; }
  bool operator==(const Event&) const = default;
};

using Schedule = std::vector<Event>;

// Parses schedule text. `source` names the input in error messages. Node ids
// must be in 0..num_nodes-1. Throws InputError naming the line, and
// Stopped once a stop is requested (model/stop.h). If `event_lines` is
// given, it receives the 1-based line of every event.
Schedule ParseScheduleText(std::istream& in, const std::string& source,
                           int32_t num_nodes,
                           std::vector<int64_t>* event_lines = nullptr);
// The same for a regular file (a directory, FIFO or device is refused, and
// so is a file whose schedule would not fit in memory).
Schedule ReadScheduleFile(const std::string& path, int32_t num_nodes,
                          std::vector<int64_t>* event_lines = nullptr);

void WriteScheduleText(std::ostream& out, const Schedule& schedule);

// The letter of an event in the text format: 'c', 'f', 'o', 'p' or 'w'.
char OpLetter(Event::Op op);
// Its inverse; nothing for any other letter.
std::optional<Event::Op> OpFromLetter(char letter);

}  // namespace remat
