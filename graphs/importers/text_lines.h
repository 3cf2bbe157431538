// Line-by-line reading for the text importers (Kusumoto et al.'s cg_*.txt,
// TwRemat's remat2), so that every error names the file and the line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/stop.h"

namespace remat {

class TextLines {
 public:
  // `text` must outlive this reader; `source` names it in errors.
  TextLines(std::string_view text, std::string source);

  // The next line (without its line break), or false at the end of the
  // text; throws Stopped once a stop is requested (model/stop.h).
  bool Next(std::string_view& line);
  // Like Next but fails with "unexpected end of file, expected <what>".
  std::string_view Expect(const std::string& what);
  // Number of the line Next last returned (1-based); 0 before the first.
  int64_t line_number() const { return line_number_; }
  const std::string& source() const { return source_; }

  // Throws InputError "<source>:<line>: <what>" for the current line.
  [[noreturn]] void Fail(const std::string& what) const;
  [[noreturn]] void FailAt(int64_t line, const std::string& what) const;

  // A non-negative decimal integer that fits int64 (`what` names it).
  int64_t Count(std::string_view token, const std::string& what) const;

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_number_ = 0;
  std::string source_;
  StopPoll stop_;
};

// Splits at runs of spaces and tabs.
std::vector<std::string_view> SplitWords(std::string_view line);

// The file name without directories and the last extension: the graph name
// of the importers, since these formats name no graph.
std::string FileStem(const std::string& path);

}  // namespace remat
