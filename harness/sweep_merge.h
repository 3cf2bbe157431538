// `remat merge`: one results file from the results files or journals of
// parts of one sweep (shards of a job array, a killed run's journal).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace remat {

// Reads every file (a results file or a journal, told apart by content),
// refuses (InputError) files of another configuration (code version, time
// limit, budgets, graphs, algorithms) than the first, and returns the
// results of all their points, with gaps computed over them all. A point
// in several files is taken from the first. Points none of the files has
// are counted in context.missing_points and noted on stderr.
nlohmann::json MergeSweeps(const std::vector<std::string>& paths,
                           const std::string& command_line);

}  // namespace remat
