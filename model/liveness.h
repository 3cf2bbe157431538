// The shared liveness pass (docs/model.md, "Liveness"; docs/algorithms.md,
// "Shared building blocks"): turns a sequence of computes into a full
// schedule by inserting frees. Every algorithm that produces compute
// sequences uses it, so none writes its own free logic.
#pragma once

#include <span>
#include <vector>

#include "model/graph.h"
#include "model/schedule.h"

namespace remat {

// Each computed instance of v is freed right after the last compute that
// reads it before v's next compute (or the end), or right after its own
// compute if nothing reads that instance, unless v is in `live_out`
// (indexed by node; empty means none), which keeps v's last instance live.
Schedule InsertFrees(const Graph& graph, std::span<const NodeId> computes,
                     std::span<const uint8_t> live_out = {});

}  // namespace remat
