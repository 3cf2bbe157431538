// Errors the user can fix: bad files, bad specs, bad parameters.
//
// Every reader and parser throws InputError with one line that names the
// file (or spec), the node or line, and the problem. The CLI turns it into
// that line on stderr and exit status 2; nothing else catches it silently.
#pragma once

#include <stdexcept>
#include <string>

namespace remat {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace remat
