// chain:n=N[,mem=M][,cost=C] — the training graph of a chain, the classic
// simplified form of the training-graph convention (docs/model.md) and the
// setting of Chen et al. and Griewank's revolve.
//
// Forward f1..fn (f(i+1) reads fi), a loss reading fn, gradients g1..gn with
// grad_of = fi, where gi reads fi and g(i+1) (gn reads fn and the loss).
// Every node has the same mem and cost. Ids: fi = i-1, loss = n, gi = n+i.
#include <fmt/format.h>

#include "model/errors.h"
#include "model/registry.h"

namespace remat {
namespace {

struct ChainOptions {
  int64_t n = 0;
  int64_t mem = 0;
  int64_t cost = 0;
};

const Options<ChainOptions> kOptions(
    RequiredIntOption(&ChainOptions::n, "n", "number of forward nodes", 1),
    BytesOption(&ChainOptions::mem, "mem", 1, "bytes of every value"),
    IntOption(&ChainOptions::cost, "cost", 1, "cost of every node"));

Graph GenerateChain(const ChainOptions& options, const std::string& spec) {
  const int64_t n = options.n;
  const int64_t mem = options.mem;
  const int64_t cost = options.cost;
  if (n > 100'000'000) {
    throw InputError(
        fmt::format("{}: n={} is too large (at most 10^8)", spec, n));
  }
  GraphBuilder b(spec);
  b.Expect(2 * n + 1, 3 * n);
  b.set_name(spec).set_units("bytes", "abstract");
  b.set_provenance({{"generator", spec}});
  std::vector<NodeId> f(n + 1);  // 1-based
  for (int64_t i = 1; i <= n; ++i) {
    f[i] = b.add(NodeKind::kForward, mem, cost,
                 i == 1 ? std::vector<NodeId>{} : std::vector<NodeId>{f[i - 1]},
                 fmt::format("f{}", i));
  }
  NodeId next = b.add(NodeKind::kLoss, mem, cost, {f[n]}, "loss");
  // Ids of the gradients are fixed (gi = n + i) although they are built
  // from gn down to g1.
  for (int64_t i = n; i >= 1; --i) {
    NodeSpec g;
    g.id = static_cast<NodeId>(n + i);
    g.name = fmt::format("g{}", i);
    g.kind = NodeKind::kBackward;
    g.mem = mem;
    g.cost = cost;
    g.grad_of = f[i];
    g.inputs = {f[i], next};
    b.add_node(std::move(g));
    next = static_cast<NodeId>(n + i);
  }
  return std::move(b).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "chain",
    .description = "training graph of a chain: f1..fn, loss, g1..gn",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateChain),
});

}  // namespace
}  // namespace remat
