// Errors the user can fix: bad files, bad specs, bad parameters.
//
// Every reader and parser throws InputError with one line that names the
// file (or spec), the node or line, and the problem. The CLI turns it into
// that line on stderr and exit status 2; nothing else catches it silently.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace remat {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` safe to print on a terminal in one line: bytes outside printable
// ASCII (control characters, newlines, invalid UTF-8 from a binary file)
// become \xNN, and text beyond `max_chars` is cut with "...".
inline std::string Printable(std::string_view text, size_t max_chars = 400) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_chars) return out + "...";
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace remat
