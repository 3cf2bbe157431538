// What `remat list --json` prints: the registered algorithms, graph
// generators and graph formats with their parameters. One function, so that
// the CLI and the Python module (rematbench.list_json) say the same.
#pragma once

#include <nlohmann/json.hpp>

namespace remat {

// {"algorithms": [...], "generators": [...], "formats": [...]}.
nlohmann::json RegistryJson();

}  // namespace remat
