// The computational graphs of Kusumoto et al., NeurIPS 2019 (pfnet-research/
// recompute, `cg_*.txt`), mapped onto the native model exactly as
// docs/formats.md ("Kusumoto et al. 2019") binds it:
//   T F                          tensors, function records
//   <id> <bytes> <name>          T lines: `_` activation, `/...` parameter,
//                                anything else data (input image, labels)
//   forward|backward             F records of:
//   <k> <p>                        inputs and outputs,
//   <tensor> <tag>                 k lines (tag `_`, or gradient|input|output),
//   <tensor>                       p lines (for a backward record: the
//                                  tensors whose gradients it produces),
//   <FunctionType>                 Chainer's function type,
//   {...}                          its attributes as one line of JSON.
// The i-th backward record is the backward of the i-th forward record.
//
// Nodes: forward records 0..F/2-1 in file order, then their backward
// records in the same order. A backward node reads every producer of the
// gradients it takes (a value read twice gets two contributions, summed
// where they are read) and the activations among the forward values Chainer
// really retains (`_input_indexes_to_retain`, `_output_indexes_to_retain`;
// the records' input/output tags list more). Parameters (with their
// gradients) and data are not nodes: static_bytes = 2 x parameters + data.
// Costs: the authors' rule, 10 for a function type starting with "Conv", 1
// for any other, and 2x that for its backward.
#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <unordered_map>

#include "graphs/importers/text_lines.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/graph_source.h"
#include "model/json_text.h"

namespace remat {
namespace {

using nlohmann::json;

enum class Role { kActivation, kParameter, kData };

struct Tensor {
  int64_t bytes = 0;
  Role role = Role::kData;
};

struct Record {
  int64_t line = 0;  // of its `forward` / `backward` word
  std::vector<std::pair<int64_t, std::string>> inputs;  // tensor, tag
  std::vector<int64_t> outputs;
  std::string type;
  json attributes;
  int64_t attributes_line = 0;
};

struct File {
  std::unordered_map<int64_t, Tensor> tensors;
  std::vector<Record> forward, backward;
};

int64_t CheckedAdd(const TextLines& lines, int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) lines.Fail("bytes overflow int64");
  return sum;
}

int64_t ReadTensorId(const TextLines& lines, const File& file,
                     std::string_view token) {
  int64_t id = lines.Count(token, "tensor id");
  if (!file.tensors.contains(id)) {
    lines.Fail(fmt::format("unknown tensor {}", id));
  }
  return id;
}

Record ReadRecord(TextLines& lines, const File& file, bool forward) {
  Record r;
  r.line = lines.line_number();
  auto counts = SplitWords(lines.Expect("'<inputs> <outputs>'"));
  if (counts.size() != 2) lines.Fail("expected '<inputs> <outputs>'");
  const int64_t k = lines.Count(counts[0], "number of inputs");
  const int64_t p = lines.Count(counts[1], "number of outputs");
  for (int64_t i = 0; i < k; ++i) {
    auto words = SplitWords(lines.Expect("an input line '<tensor> <tag>'"));
    if (words.size() != 2) lines.Fail("expected an input '<tensor> <tag>'");
    std::string tag(words[1]);
    if (forward ? tag != "_"
                : tag != "gradient" && tag != "input" && tag != "output") {
      lines.Fail(fmt::format("unknown tag '{}' for a {} input", tag,
                             forward ? "forward" : "backward"));
    }
    r.inputs.emplace_back(ReadTensorId(lines, file, words[0]), tag);
  }
  for (int64_t i = 0; i < p; ++i) {
    auto words = SplitWords(lines.Expect("an output tensor id"));
    if (words.size() != 1) lines.Fail("expected one output tensor id");
    r.outputs.push_back(ReadTensorId(lines, file, words[0]));
  }
  auto type = SplitWords(lines.Expect("the function type"));
  if (type.size() != 1) lines.Fail("expected the function type");
  r.type = type[0];
  std::string_view attributes = lines.Expect("the attributes (JSON)");
  r.attributes_line = lines.line_number();
  r.attributes = ParseJsonLine(attributes);
  if (!r.attributes.is_object()) {
    lines.Fail("the attributes are not a one-line JSON object");
  }
  return r;
}

File Parse(TextLines& lines) {
  File file;
  auto header = SplitWords(lines.Expect("'<tensors> <records>'"));
  if (header.size() != 2) lines.Fail("expected '<tensors> <records>'");
  const int64_t num_tensors = lines.Count(header[0], "number of tensors");
  const int64_t num_records = lines.Count(header[1], "number of records");
  for (int64_t i = 0; i < num_tensors; ++i) {
    auto words =
        SplitWords(lines.Expect("a tensor line '<id> <bytes> <name>'"));
    if (words.size() != 3) {
      lines.Fail("expected a tensor '<id> <bytes> <name>'");
    }
    int64_t id = lines.Count(words[0], "tensor id");
    Tensor t{.bytes = lines.Count(words[1], "tensor bytes")};
    if (words[2] == "_") {
      t.role = Role::kActivation;
    } else if (words[2].starts_with('/')) {
      t.role = Role::kParameter;
    }
    if (!file.tensors.emplace(id, t).second) {
      lines.Fail(fmt::format("tensor {} is defined twice", id));
    }
  }
  for (int64_t i = 0; i < num_records; ++i) {
    std::string_view word = lines.Expect("'forward' or 'backward'");
    if (word != "forward" && word != "backward") {
      lines.Fail(
          fmt::format("expected 'forward' or 'backward', got '{}'", word));
    }
    bool forward = word == "forward";
    (forward ? file.forward : file.backward)
        .push_back(ReadRecord(lines, file, forward));
  }
  std::string_view line;
  while (lines.Next(line)) {
    if (!SplitWords(line).empty()) {
      lines.Fail("unexpected text after the last record");
    }
  }
  return file;
}

// Indexes into `count` items listed in `attributes[key]` (null: none).
std::vector<int64_t> Retained(const TextLines& lines, const Record& r,
                              const char* key, size_t count) {
  auto it = r.attributes.find(key);
  if (it == r.attributes.end()) {
    lines.FailAt(
        r.attributes_line,
        fmt::format("attributes lack '{}' (what the backward reads)", key));
  }
  std::vector<int64_t> indexes;
  if (it->is_null()) return indexes;
  if (!it->is_array()) {
    lines.FailAt(r.attributes_line, fmt::format("'{}' is not a list", key));
  }
  for (const json& index : *it) {
    if (!index.is_number_integer() || index.get<int64_t>() < 0 ||
        index.get<int64_t>() >= static_cast<int64_t>(count)) {
      lines.FailAt(r.attributes_line,
                   fmt::format("'{}' holds {}, not an index below {}", key,
                               DescribeJson(index), count));
    }
    indexes.push_back(index.get<int64_t>());
  }
  return indexes;
}

// Chainer's loss functions (SoftmaxCrossEntropy in the published graphs).
bool IsLossFunction(std::string_view type) {
  return type.ends_with("CrossEntropy") || type.ends_with("Loss") ||
         type == "MeanSquaredError" || type == "MeanAbsoluteError";
}

// Chainer's rank (depth) of a function; null if absent.
json Rank(const Record& r) {
  auto it = r.attributes.find("rank");
  return it == r.attributes.end() ? json() : *it;
}

void AddOnce(std::vector<NodeId>& inputs, NodeId v) {
  if (std::find(inputs.begin(), inputs.end(), v) == inputs.end()) {
    inputs.push_back(v);
  }
}

// Marks loss functions and the arithmetic that combines their outputs
// (GoogLeNet adds three losses, PSPNet scales and adds two) as `loss`:
// forward nodes all of whose inputs are losses, in topological order.
void MarkLosses(std::span<NodeSpec> forward) {
  const size_t n = forward.size();
  std::vector<std::vector<NodeId>> consumers(n);
  std::vector<size_t> pending(n);
  std::vector<NodeId> ready;
  for (const NodeSpec& f : forward) {
    for (NodeId u : f.inputs) consumers[u].push_back(f.id);
    pending[f.id] = f.inputs.size();
    if (f.inputs.empty()) ready.push_back(f.id);
  }
  // Nodes on a cycle are never ready; GraphBuilder reports the cycle.
  while (!ready.empty()) {
    NodeSpec& f = forward[ready.back()];
    ready.pop_back();
    if (IsLossFunction(f.op) ||
        (!f.inputs.empty() &&
         std::all_of(f.inputs.begin(), f.inputs.end(), [&](NodeId u) {
           return forward[u].kind == NodeKind::kLoss;
         }))) {
      f.kind = NodeKind::kLoss;
    }
    for (NodeId w : consumers[f.id]) {
      if (--pending[w] == 0) ready.push_back(w);
    }
  }
}

Graph ReadKusumoto(const std::string& path) {
  const std::string text = ReadFile(path);
  TextLines lines(text, path);
  const File file = Parse(lines);
  const auto n = static_cast<NodeId>(file.forward.size());
  if (file.backward.size() != file.forward.size()) {
    throw InputError(fmt::format(
        "{}: {} forward records but {} backward records (they must pair up)",
        path, file.forward.size(), file.backward.size()));
  }
  auto is_activation = [&](int64_t t) {
    return file.tensors.at(t).role == Role::kActivation;
  };

  std::unordered_map<int64_t, NodeId> producer;  // activation -> forward node
  for (NodeId i = 0; i < n; ++i) {
    const Record& r = file.forward[i];
    if (r.outputs.empty()) lines.FailAt(r.line, "forward record has no output");
    for (int64_t t : r.outputs) {
      if (!is_activation(t)) {
        lines.FailAt(r.line, fmt::format("forward record outputs tensor {}, "
                                         "which is not an activation ('_')",
                                         t));
      }
      if (auto [it, fresh] = producer.emplace(t, i); !fresh) {
        lines.FailAt(r.line, fmt::format("tensor {} is also produced by the "
                                         "forward record on line {}",
                                         t, file.forward[it->second].line));
      }
    }
  }
  auto producer_of = [&](const Record& r, int64_t t) {
    auto it = producer.find(t);
    if (it == producer.end()) {
      lines.FailAt(r.line, fmt::format("reads activation {}, which no forward "
                                       "record produces",
                                       t));
    }
    return it->second;
  };
  // Backward nodes producing each activation's gradient (contributions).
  std::unordered_map<int64_t, std::vector<NodeId>> gradient_producers;
  for (NodeId i = 0; i < n; ++i) {
    for (int64_t t : file.backward[i].outputs) {
      if (is_activation(t)) AddOnce(gradient_producers[t], n + i);
    }
  }

  std::vector<NodeSpec> nodes(2 * static_cast<size_t>(n));
  for (NodeId i = 0; i < n; ++i) {
    const Record& fr = file.forward[i];
    const Record& br = file.backward[i];
    if (br.type != fr.type || Rank(br) != Rank(fr)) {
      lines.FailAt(br.line,
                   fmt::format("backward record #{} ({}) does not match "
                               "forward record #{} ({}, line {})",
                               i, br.type, i, fr.type, fr.line));
    }
    const int64_t cost = fr.type.starts_with("Conv") ? 10 : 1;
    NodeSpec& f = nodes[i];
    f.id = i;
    // Named after the output tensor, which is how the file names values.
    f.name = fmt::format("{}_{}", fr.type, fr.outputs[0]);
    f.op = fr.type;
    f.cost = cost;
    for (int64_t t : fr.outputs) {
      f.mem = CheckedAdd(lines, f.mem, file.tensors.at(t).bytes);
    }
    for (const auto& [t, tag] : fr.inputs) {
      if (is_activation(t)) AddOnce(f.inputs, producer_of(fr, t));
    }

    NodeSpec& b = nodes[n + i];
    b.id = n + i;
    b.name = f.name + "_backward";
    b.kind = NodeKind::kBackward;
    b.op = fr.type;
    b.cost = 2 * cost;
    b.grad_of = i;
    for (const auto& [t, tag] : br.inputs) {
      if (tag == "gradient" && is_activation(t)) {
        for (NodeId g : gradient_producers[t]) AddOnce(b.inputs, g);
      }
    }
    for (int64_t k :
         Retained(lines, fr, "_input_indexes_to_retain", fr.inputs.size())) {
      int64_t t = fr.inputs[k].first;
      if (is_activation(t)) AddOnce(b.inputs, producer_of(fr, t));
    }
    if (!Retained(lines, fr, "_output_indexes_to_retain", fr.outputs.size())
             .empty()) {
      AddOnce(b.inputs, i);
    }
    for (int64_t t : br.outputs) {
      if (is_activation(t)) {
        b.mem = CheckedAdd(lines, b.mem, file.tensors.at(t).bytes);
      }
    }
  }
  MarkLosses(std::span<NodeSpec>(nodes.data(), n));

  // Parameters count twice: their values and their gradients.
  int64_t static_bytes = 0;
  for (const auto& [id, t] : file.tensors) {
    if (t.role == Role::kActivation) continue;
    const int64_t gradient = t.role == Role::kParameter ? t.bytes : 0;
    if (__builtin_add_overflow(static_bytes, t.bytes, &static_bytes) ||
        __builtin_add_overflow(static_bytes, gradient, &static_bytes)) {
      throw InputError(
          fmt::format("{}: parameter and data bytes overflow int64", path));
    }
  }

  GraphBuilder builder(path);
  builder.set_name(FileStem(path))
      .set_static_bytes(static_bytes)
      .set_units("bytes", "abstract")
      .set_provenance({{"format", "kusumoto"},
                       {"file", path},
                       {"cost_model",
                        "authors: 10 for Conv* functions, 1 "
                        "otherwise; backward 2x forward"}});
  for (NodeSpec& node : nodes) builder.add_node(std::move(node));
  return std::move(builder).Build();
}

// The first line is "<tensors> <records>": two numbers and nothing else.
bool SniffKusumoto(const std::string&, const std::string& head) {
  std::string_view first(head);
  first = first.substr(0, first.find_first_of("\r\n"));
  auto words = SplitWords(first);
  return words.size() == 2 &&
         std::all_of(words.begin(), words.end(), [](std::string_view w) {
           return std::all_of(w.begin(), w.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
         });
}

const bool kRegistered = RegisterGraphFormat({
    .name = "kusumoto",
    .description = "Kusumoto et al. 2019 computational graphs (cg_*.txt)",
    .sniff = SniffKusumoto,
    .read = ReadKusumoto,
    .write = nullptr,
});

}  // namespace
}  // namespace remat
