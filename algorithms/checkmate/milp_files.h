// A staged model (checkmate_model.h) as files that a MILP solver outside
// this process reads: the model in free MPS, a start point as a HiGHS
// solution file, and the solution HiGHS writes back. Columns are named
// x<j> and rows r<i> after their indices in CheckmateModel, so that a
// solution maps back column by column.
#pragma once

#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"

namespace remat {

// Free-format MPS: each row as E, L or G (a row bounded on both sides with
// different bounds gets a RANGES entry), integer columns between INTORG and
// INTEND markers, and every column's bounds written out, since readers
// disagree on the default upper bound of a marked integer column.
void WriteMps(const CheckmateModel& model, std::ostream& out);

// `x` (one value per column) as a HiGHS solution file, which `highs
// --read_solution_file` takes as the MIP start.
void WriteHighsStart(const CheckmateModel& model, std::span<const double> x,
                     std::ostream& out);

// What a HiGHS solution file says: the model status line and, when it has
// a feasible primal solution, the value of each of `num_cols` columns.
struct HighsSolution {
  std::string model_status;
  std::optional<std::vector<double>> x;
};
// Throws std::runtime_error when the text is not such a file or names a
// column that is not x<j> with j < num_cols.
HighsSolution ReadHighsSolution(std::istream& in, int num_cols);

}  // namespace remat
