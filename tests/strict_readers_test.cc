// Readers that refuse what they once accepted: bytes after a NUL that
// follows a JSON document, a key twice in one object (the last silently
// won), fields of the wrong type replaced by defaults, files of /proc and
// /sys (which say they are empty); and names from a file printed to a
// terminal with their control characters escaped.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/cli_support.h"

namespace remat {
namespace {

using testing::Outcome;

class StrictReaders : public testing::Cli {
 protected:
  void ExpectRefused(const std::string& args, const std::string& expected) {
    const Outcome run = Remat(args);
    EXPECT_EQ(run.status, 2) << args << "\n" << run.err;
    EXPECT_NE(run.err.find(expected), std::string::npos) << args << "\n"
                                                         << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1)
        << args << "\n"
        << run.err;
    EXPECT_TRUE(run.out.empty()) << args << "\n" << run.out;
  }
};

std::string Graph(const std::string& top = "",
                  const std::string& node = "\"mem\": 1") {
  return "{\"format\": \"rematbench-graph\", \"version\": 1, " + top +
         "\"nodes\": [{\"id\": 0, " + node +
         ", \"cost\": 1, \"inputs\": []}]}";
}

TEST_F(StrictReaders, ADocumentEndsWhereItEnds) {
  const std::string nul = Write("nul.json", Graph() + std::string(1, '\0') +
                                                "{\"nodes\": []}");
  ExpectRefused("graph info " + nul, "nul.json:1: not valid JSON: a NUL byte");
  const std::string results = (dir_ / "r.json").string();
  ASSERT_EQ(Remat("sweep --graphs chain:n=4 --algorithms noremat --budgets "
                  "1 --threads 1 -o " +
                  results)
                .status,
            0);
  const std::string text = ReadFile(results);
  const std::string padded =
      Write("padded.json", text + std::string(1, '\0') + "garbage");
  ExpectRefused("merge " + padded + " -o " + (dir_ / "m.json").string(),
                "a NUL byte");
  // Inside a string a NUL is written \u0000, which is read.
  EXPECT_EQ(Remat("graph info " +
                  Write("escaped.json", Graph("\"name\": \"a\\u0000b\", ")))
                .status,
            0);
}

TEST_F(StrictReaders, AKeyTwiceInOneObjectIsRefused) {
  ExpectRefused("graph info " +
                    Write("node.json", Graph("", "\"mem\": 1, \"mem\": 5")),
                "not valid JSON: the key \"mem\" twice in one object");
  ExpectRefused(
      "graph info " +
          Write("top.json", Graph("\"name\": \"a\", \"name\": \"b\", ")),
      "the key \"name\" twice in one object");
  // The same key in two objects is no repeat.
  EXPECT_EQ(Remat("graph info " +
                  Write("two.json",
                        "{\"format\": \"rematbench-graph\", \"version\": 1, "
                        "\"nodes\": [{\"id\": 0, \"mem\": 1, \"cost\": 1, "
                        "\"inputs\": []}, {\"id\": 1, \"mem\": 1, \"cost\": "
                        "1, \"inputs\": [0]}]}"))
                .status,
            0);
  const std::string corpus =
      Write("corpus.json",
            "{\"format\": \"rematbench-corpus\", \"version\": 1, "
            "\"graphs\": [\"chain:n=4\"], \"graphs\": [\"chain:n=5\"]}");
  ExpectRefused("sweep --threads 1 --corpus " + corpus,
                "the key \"graphs\" twice in one object");
}

TEST_F(StrictReaders, FieldsOfTheWrongTypeAreRefusedNotDefaulted) {
  for (const std::string& units : {"\"flop\"", "3", "[\"bytes\"]", "true"}) {
    ExpectRefused("graph info " + Write("u.json", Graph("\"units\": " + units +
                                                        ", ")),
                  "\"units\" must be an object");
  }
  ExpectRefused(
      "graph info " +
          Write("m.json", Graph("\"units\": {\"memory\": 8, \"cost\": "
                                "\"flop\"}, ")),
      "\"units\".\"memory\" must be a string, not 8");
  ExpectRefused(
      "graph info " + Write("c.json", Graph("\"units\": {\"cost\": {}}, ")),
      "\"units\".\"cost\" must be a string");
  ExpectRefused("graph info " + Write("n.json", Graph("\"name\": 7, ")),
                "\"name\" must be a string, not 7");
  // Units given as strings, or left out, are read.
  const Outcome read = Remat(
      "graph info --json " +
      Write("ok.json", Graph("\"units\": {\"cost\": \"flop\"}, ")));
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_NE(read.out.find("\"cost\": \"flop\""), std::string::npos);
}

TEST_F(StrictReaders, FilesOfProcAndSysAreRefused) {
  ExpectRefused("graph info /proc/self/status",
                "/proc/self/status: not a regular file (a file of /proc)");
  ExpectRefused("validate -g chain:n=4 -s /proc/self/environ",
                "not a regular file (a file of /proc)");
  ExpectRefused("merge /proc/self/status -o " + (dir_ / "m.json").string(),
                "not a regular file (a file of /proc)");
  ExpectRefused("sweep --threads 1 --corpus /proc/self/status",
                "not a regular file (a file of /proc)");
  ExpectRefused("graph info /sys/kernel/mm/transparent_hugepage/enabled",
                "not a regular file");
}

TEST_F(StrictReaders, NamesPrintedToATerminalEscapeControlCharacters) {
  const std::string file = Write(
      "names.json",
      Graph("\"name\": \"a\\u001b[2Jb\\nc\\rd\\u0085e \\u00e9\", "));
  const Outcome run = Remat("graph info " + file);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("a\\x1b[2Jb\\x0ac\\x0dd\\xc2\\x85e \xc3\xa9"),
            std::string::npos)
      << run.out;
  for (const char c : run.out) {
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20)
        << static_cast<int>(c);
  }
  // --json writes the name as JSON, escaped by JSON's rules.
  EXPECT_NE(Remat("graph info --json " + file).out.find("a\\u001b[2Jb\\nc"),
            std::string::npos);
}

}  // namespace
}  // namespace remat
