// Structure-aware: nesting depth and byte content in every JSON
// reader, which byte-level mutation of whole files rarely reaches (10^5
// brackets; bytes that are not UTF-8 where a name is kept). The input is
//   byte 0      the reader: native graph, Checkmate node-link, corpus
//               manifest, journal, Kusumoto's attribute line, remat2 name
//   byte 1      where the nested value goes (a field of the reader's
//               template)
//   bytes 2-3   the nesting depth (little endian, times 4: up to 262,140)
//   bytes 4-    raw bytes placed in a name (or a string the reader keeps)
// The reader must read the document or refuse it with InputError; a graph
// it reads must be written as JSON and read back, and its summary written,
// without any exception: that is where a deep or non-UTF-8 value crashed.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "harness/results.h"
#include "harness/sweep.h"
#include "harness/sweep_journal.h"
#include "model/graph_json.h"
#include "model/json_text.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using remat::fuzz::Text;

// `depth` nested arrays, objects (alternately, as a field picks) around 1.
std::string Nested(int depth, bool objects) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += objects ? "{\"a\": " : "[";
  text += "1";
  for (int i = 0; i < depth; ++i) text += objects ? "}" : "]";
  return text;
}

// A JSON string literal holding `bytes` as they are (escaping only what
// would end the string), so that invalid UTF-8 reaches the parser.
std::string RawString(std::string_view bytes) {
  std::string text = "\"";
  for (char c : bytes) {
    if (c == '"' || c == '\\') text += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      text += ' ';
    } else {
      text += c;
    }
  }
  return text + "\"";
}

// What a successful read promises: the graph written as native JSON reads
// back, and its summary is written; nothing here may throw.
// (An InputError here is a bug too, not a refusal: the reader must read
// what the writer wrote.)
void WriteBack(const remat::Graph& graph) {
  std::ostringstream text;
  remat::WriteGraphJson(text, graph);
  try {
    remat::ParseGraphJson(text.str(), "written");
  } catch (const remat::InputError& e) {
    std::fprintf(stderr, "a written graph does not read back: %s\n", e.what());
    std::abort();
  }
  remat::DumpJson(remat::ToJson(remat::Summarize(graph, "fuzz")), 2);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int reader = data[0] % 6;
  const int field = data[1] % 4;
  const int depth = 4 * (data[2] | data[3] << 8);
  const std::string_view bytes = Text(data + 4, size - 4);
  const std::string deep = Nested(depth, field % 2 == 1);
  const std::string name = RawString(bytes);
  const auto at = [&](int f) { return field == f ? deep : std::string("1"); };
  std::string text;
  switch (reader) {
    case 0:  // native graph
      text = "{\"format\": \"rematbench-graph\", \"version\": " +
             (field == 3 ? deep : "1") + ", \"name\": " + name +
             ", \"provenance\": {\"x\": " + deep +
             "}, \"nodes\": " + "[{\"id\": 0, \"name\": " + name +
             ", \"mem\": " + at(0) + ", \"cost\": " + at(1) +
             ", \"inputs\": []}]}";
      return remat::fuzz::Accept([&] {
        remat::Graph g = remat::ParseGraphJson(text, "fuzz");
        WriteBack(g);
      });
    case 1:  // Checkmate node-link
      text =
          "{\"directed\": true, \"multigraph\": false, \"graph\": "
          "{\"name\": " +
          (field == 3 ? deep : name) + "}, \"nodes\": [{\"name\": " + name +
          ", \"backward\": false, \"cost_cpu\": " + at(0) +
          ", \"cost_ram\": " + at(1) + ", \"id\": 0}], \"links\": []}";
      return remat::fuzz::Accept([&] {
        remat::Graph g =
            remat::LoadGraph(remat::fuzz::WriteInput(text, ".json"));
        WriteBack(g);
      });
    case 2:  // corpus manifest
      text = "{\"format\": \"rematbench-corpus\", \"graphs\": [{\"spec\": " +
             (field == 0 ? deep : name) + "}, " + deep + "]}";
      return remat::fuzz::Accept(
          [&] { remat::ReadCorpus(remat::fuzz::WriteInput(text, ".json")); });
    case 3:  // journal: a header and an entry
      text =
          "{\"format\": \"rematbench-journal\", \"configuration\": "
          "{\"budgets_per_graph\": 1, \"timeout_seconds\": 1, "
          "\"algorithms\": [{\"name\": " +
          name + ", \"params\": {}}]}, \"graphs\": [{\"name\": " + name +
          ", \"lower_bound_bytes\": 1, \"noremat_peak_bytes\": " + at(0) +
          "}]}\n{\"key\": {\"graph\": " + name +
          ", \"algorithm\": \"a\", \"params\": " +
          (field == 1 ? deep : "\"\"") +
          "}, \"points\": [{\"budget_bytes\": " + at(2) +
          ", \"status\": " + name + ", \"solve_seconds\": " + at(3) +
          ", \"cost\": null}]}\n";
      return remat::fuzz::Accept([&] {
        remat::JournalContents journal =
            remat::ReadJournal(remat::fuzz::WriteInput(text, ".journal"));
        remat::DumpJson(journal.header);
        for (const auto& [key, points] : journal.entries) {
          remat::DumpJson(key);
          remat::DumpJson(points);
        }
      });
    case 4: {  // Kusumoto's attribute lines: a function and its backward
      std::string type(bytes.substr(0, bytes.find_first_of(" \t\r\n")));
      if (type.empty()) type = "ReLU";
      const std::string attributes =
          "{\"_input_indexes_to_retain\": " + (field == 0 ? deep : "null") +
          ", \"_output_indexes_to_retain\": [0], \"_output_count\": 1, "
          "\"rank\": " +
          deep + "}\n";
      text = "3 2\n0 4 data\n1 4 _\n2 4 _\nforward\n1 1\n0 _\n1\n" + type +
             "\n" + attributes + "backward\n2 1\n2 gradient\n1 output\n0\n" +
             type + "\n" + attributes;
      return remat::fuzz::Accept([&] {
        remat::Graph g =
            remat::LoadGraph(remat::fuzz::WriteInput(text, ".txt"));
        WriteBack(g);
      });
    }
    default: {  // remat2: the graph is named after its file
      const std::string path = remat::fuzz::WriteInput(
          "p remat2\nnode 0 cpu 1 mem 1\nnode 1 deps 0 cpu 1 mem 1\n",
          ".remat2");
      std::string stem(bytes.substr(0, 64));
      for (char& c : stem) {
        if (c == '/' || c == '\0') c = '_';
      }
      const std::string named = path + "." + stem + ".remat2";
      if (std::rename(path.c_str(), named.c_str()) != 0) return 0;
      const int result = remat::fuzz::Accept([&] {
        remat::Graph g = remat::LoadGraph(named);
        WriteBack(g);
      });
      std::remove(named.c_str());
      return result;
    }
  }
}
