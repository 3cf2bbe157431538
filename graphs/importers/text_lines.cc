#include "graphs/importers/text_lines.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

#include "model/errors.h"

namespace remat {

TextLines::TextLines(std::string_view text, std::string source)
    : text_(text), source_(std::move(source)) {}

bool TextLines::Next(std::string_view& line) {
  stop_.Tick();
  if (pos_ >= text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  line = text_.substr(pos_, end - pos_);
  // Files written on Windows end their lines with "\r\n".
  if (line.ends_with('\r')) line.remove_suffix(1);
  pos_ = end + 1;
  ++line_number_;
  return true;
}

std::string_view TextLines::Expect(const std::string& what) {
  std::string_view line;
  if (!Next(line)) {
    FailAt(line_number_ + 1,
           fmt::format("unexpected end of file, expected {}", what));
  }
  return line;
}

void TextLines::Fail(const std::string& what) const {
  FailAt(line_number_, what);
}

void TextLines::FailAt(int64_t line, const std::string& what) const {
  throw InputError(fmt::format("{}:{}: {}", source_, line, what));
}

int64_t TextLines::Count(std::string_view token,
                         const std::string& what) const {
  int64_t value = 0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    Fail(fmt::format("{} '{}' overflows int64", what, token));
  }
  // from_chars accepts a leading '-'; sizes and ids never have one.
  if (ec != std::errc() || ptr != end || token.empty() || token[0] == '-') {
    Fail(fmt::format("{} must be a non-negative integer (got '{}')", what,
                     token));
  }
  return value;
}

std::vector<std::string_view> SplitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::string FileStem(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace remat
