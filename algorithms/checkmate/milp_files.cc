// Writes staged models as MPS and reads HiGHS solution files
// (milp_files.h).
#include "algorithms/checkmate/milp_files.h"

#include <fmt/format.h>

#include <cmath>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>

namespace remat {
namespace {

// Shortest text that reads back as the same double.
std::string Num(double v) { return fmt::format("{}", v); }

}  // namespace

void WriteMps(const CheckmateModel& model, std::ostream& out) {
  const int cols = model.num_cols(), rows = model.num_rows();
  std::vector<uint8_t> integer(cols, 0);
  for (int col : model.integer_cols()) integer[col] = 1;
  const std::vector<double>& lower = model.row_lower();
  const std::vector<double>& upper = model.row_upper();

  out << "NAME staged\nROWS\n N obj\n";
  for (int r = 0; r < rows; ++r) {
    const char* type = lower[r] == upper[r]   ? "E"
                       : std::isinf(lower[r]) ? "L"
                                              : "G";
    out << ' ' << type << " r" << r << '\n';
  }
  out << "COLUMNS\n";
  bool in_integers = false;
  for (int c = 0; c < cols; ++c) {
    if (integer[c] != in_integers) {
      in_integers = integer[c];
      out << "    MARKER 'MARKER' " << (in_integers ? "'INTORG'" : "'INTEND'")
          << '\n';
    }
    // The objective entry is written even when 0, so that a column no row
    // reads is still declared.
    out << "    x" << c << " obj " << Num(model.objective()[c]) << '\n';
    for (int p = model.col_starts()[c]; p < model.col_starts()[c + 1]; ++p) {
      out << "    x" << c << " r" << model.row_index()[p] << ' '
          << Num(model.values()[p]) << '\n';
    }
  }
  if (in_integers) out << "    MARKER 'MARKER' 'INTEND'\n";
  out << "RHS\n";
  for (int r = 0; r < rows; ++r) {
    const double rhs = std::isinf(upper[r]) ? lower[r] : upper[r];
    if (rhs != 0) out << "    rhs r" << r << ' ' << Num(rhs) << '\n';
  }
  out << "RANGES\n";
  for (int r = 0; r < rows; ++r) {
    if (lower[r] != upper[r] && !std::isinf(lower[r]) &&
        !std::isinf(upper[r])) {
      out << "    rng r" << r << ' ' << Num(upper[r] - lower[r]) << '\n';
    }
  }
  out << "BOUNDS\n";
  for (int c = 0; c < cols; ++c) {
    const double lo = model.col_lower()[c], up = model.col_upper()[c];
    if (lo == up) {
      out << " FX bnd x" << c << ' ' << Num(lo) << '\n';
      continue;
    }
    if (std::isinf(lo)) {
      out << " MI bnd x" << c << '\n';
    } else if (lo != 0) {
      out << " LO bnd x" << c << ' ' << Num(lo) << '\n';
    }
    if (std::isinf(up)) {
      out << " PL bnd x" << c << '\n';
    } else {
      out << " UP bnd x" << c << ' ' << Num(up) << '\n';
    }
  }
  out << "ENDATA\n";
}

void WriteHighsStart(const CheckmateModel& model, std::span<const double> x,
                     std::ostream& out) {
  double objective = 0;
  for (int c = 0; c < model.num_cols(); ++c) {
    objective += model.objective()[c] * x[c];
  }
  out << "Model status\nUnknown\n\n# Primal solution values\nFeasible\n"
      << "Objective " << Num(objective) << "\n# Columns " << model.num_cols()
      << '\n';
  for (int c = 0; c < model.num_cols(); ++c) {
    out << 'x' << c << ' ' << Num(x[c]) << '\n';
  }
}

HighsSolution ReadHighsSolution(std::istream& in, int num_cols) {
  HighsSolution solution;
  std::string line;
  if (!std::getline(in, line) || line != "Model status" ||
      !std::getline(in, solution.model_status)) {
    throw std::runtime_error("not a HiGHS solution file");
  }
  while (std::getline(in, line) && line != "# Primal solution values") {
  }
  if (!std::getline(in, line)) return solution;  // no primal values
  if (line != "Feasible") return solution;
  std::vector<double> x(num_cols, 0);
  std::vector<uint8_t> seen(num_cols, 0);
  int listed = -1;
  while (std::getline(in, line)) {
    if (line.rfind("# Columns ", 0) == 0) {
      listed = std::stoi(line.substr(10));
      break;
    }
  }
  if (listed != num_cols) {
    throw std::runtime_error(fmt::format(
        "the solution has {} columns, the model {}", listed, num_cols));
  }
  for (int i = 0; i < listed; ++i) {
    std::string name;
    double value = 0;
    if (!(in >> name >> value) || name.size() < 2 || name[0] != 'x') {
      throw std::runtime_error("unreadable column value in the solution");
    }
    size_t used = 0;
    const int col = std::stoi(name.substr(1), &used);
    if (used + 1 != name.size() || col < 0 || col >= num_cols || seen[col]) {
      throw std::runtime_error(
          fmt::format("unexpected column {} in the solution", name));
    }
    seen[col] = 1;
    x[col] = value;
  }
  solution.x = std::move(x);
  return solution;
}

}  // namespace remat
