// The command line at its edges: inputs that would not fit in
// memory, files that are not regular files, numeric options out of range,
// empty and target-less graphs, and CLI11's own errors, each refused with
// exit status 2 and exactly one printable line naming the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace remat {
namespace {

using testing::Cli;
using testing::Outcome;

// Exit 2 and one line on stderr holding `expected`, all of it printable.
void ExpectRefused(const Outcome& run, const std::string& expected,
                   const std::string& what) {
  EXPECT_EQ(run.status, 2) << what << "\n" << run.err;
  EXPECT_NE(run.err.find(expected), std::string::npos) << what << "\n"
                                                       << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << what << "\n"
                                                                 << run.err;
  EXPECT_TRUE(
      std::all_of(run.err.begin(), run.err.end() - 1,
                  [](unsigned char c) { return c >= 0x20 && c < 0x7f; }))
      << what << "\n"
      << run.err;
  EXPECT_TRUE(run.out.empty()) << what << "\n" << run.out;
}

std::string NativeGraph(const std::string& nodes,
                        const std::string& static_bytes = "0") {
  return "{\"format\": \"rematbench-graph\", \"version\": 1, "
         "\"static_bytes\": " +
         static_bytes + ", \"nodes\": " + nodes + "}";
}

TEST_F(Cli, GeneratorsRefuseWhatWouldNotFitBeforeAllocating) {
  // The documented maximum needs about 60 GB: refused with the estimate.
  Outcome run = Remat("graph info chain:n=100000000 --max-memory 8GiB");
  ExpectRefused(run, "chain:n=100000000: a graph of 200000001 nodes", "chain");
  EXPECT_NE(run.err.find("needs about 58.11 GiB, more than the 8.00 GiB of "
                         "--max-memory"),
            std::string::npos)
      << run.err;
  // The limit is the one given: a small graph fits, the same one does not
  // under a tiny limit.
  EXPECT_EQ(Remat("graph info chain:n=1000 --max-memory 1MiB").status, 0);
  ExpectRefused(Remat("graph info chain:n=1000 --max-memory 100KiB"),
                "more than the 100.00 KiB of --max-memory", "tiny limit");
  // Generators that do not know their size are checked as nodes come.
  ExpectRefused(
      Remat("graph info transformer:layers=100000,d_model=64,heads=2,seq=8,"
            "batch=1 --max-memory 16MiB"),
      "more than the 16.00 MiB of --max-memory", "transformer");
  ExpectRefused(Remat("graph info chain:n=4 --max-memory ''"),
                "--max-memory: empty", "empty limit");
}

TEST_F(Cli, ReadersRefuseFilesWhoseParseWouldNotFit) {
  std::string graph = (dir_ / "chain.json").string();
  ASSERT_EQ(Remat("graph convert chain:n=2000 --to json -o " + graph).status,
            0);
  EXPECT_EQ(Remat("graph info " + graph + " --max-memory 64MiB").status, 0);
  ExpectRefused(Remat("graph info " + graph + " --max-memory 1MiB"),
                "chain.json (", "json");
  // 1 MB of schedule text (comments) is 4 MB to hold as events.
  std::string schedule =
      Write("s.txt", std::string(1 << 20, '#').replace(1000, 1, "\n"));
  ExpectRefused(
      Remat("validate -g chain:n=4 -s " + schedule + " --max-memory 2MiB"),
      "s.txt (1.00 MiB of schedule text): needs about 4.00 MiB, more than the "
      "2.00 MiB of --max-memory",
      "schedule");
}

TEST_F(Cli, NonRegularFilesAreRefusedWithoutReading) {
  ExpectRefused(Remat("validate -g chain:n=4 -s /dev/zero"),
                "/dev/zero: not a regular file (a character device)",
                "/dev/zero");
  ExpectRefused(Remat("graph info /dev/zero"), "/dev/zero: not a regular file",
                "graph /dev/zero");
  std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused(Remat("graph info " + fifo),
                "fifo: not a regular file (a pipe)", "fifo graph");
  ExpectRefused(Remat("validate -g chain:n=4 -s " + fifo),
                "fifo: not a regular file (a pipe)", "fifo schedule");
  ExpectRefused(Remat("validate -g chain:n=4 -s " + dir_.string()),
                "is a directory", "directory schedule");
  ExpectRefused(Remat("sweep --corpus " + dir_.string()), "is a directory",
                "directory corpus");
  ExpectRefused(Remat("validate -g chain:n=4 -s " + (dir_ / "none").string()),
                "none: cannot open file (No such file or directory)",
                "missing schedule");
}

// Root reads files without permission (CAP_DAC_OVERRIDE, and
// CAP_DAC_READ_SEARCH for reading), and CI runs as root: there remat runs
// still as root but without those two capabilities (setpriv drops them from
// the bounding set, so the exec'd remat never gets them), which is how an
// ordinary user meets the file, whatever the permissions of the folders
// above the build.
TEST_F(Cli, AnUnreadableScheduleGivesTheReason) {
  std::string schedule = Write("locked.txt", "c 0\n");
  ASSERT_EQ(chmod(schedule.c_str(), 0), 0);
  const std::string unprivileged =
      geteuid() == 0
          ? "setpriv --bounding-set=-dac_override,-dac_read_search --"
          : "";
  ExpectRefused(Remat("validate -g chain:n=4 -s " + schedule, unprivileged),
                "locked.txt: cannot open file (Permission denied)", "locked");
}

TEST_F(Cli, TimeLimitsMustBePositiveAndFinite) {
  for (const std::string value :
       {"-1", "0", "nan", "inf", "-inf", "1e999", "soon", "''"}) {
    ExpectRefused(Remat("solve -a noremat -g chain:n=4 --timeout " + value),
                  "remat solve: --timeout: must be a number of seconds > 0",
                  "solve " + value);
    Outcome sweep = Remat(
        "sweep --graphs chain:n=4 --algorithms noremat "
        "--timeout " +
        value);
    ExpectRefused(sweep, "remat sweep: --timeout: must be a number of seconds",
                  "sweep " + value);
    EXPECT_LT(sweep.err.size(), 200u) << sweep.err;
  }
  EXPECT_EQ(Remat("solve -a noremat -g chain:n=4 --timeout 0.5").status, 0);
}

TEST_F(Cli, BudgetsReadTheSameWithOrWithoutSpacesAndNeverEmpty) {
  for (const std::string budget : {"20", "' 20'", "'20 '", "' 20 B '"}) {
    Outcome run = Remat("solve -a noremat -g chain:n=4 --json -b " + budget);
    ASSERT_EQ(run.status, 0) << budget << "\n" << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["budget_bytes"], 20) << budget;
  }
  for (const std::string budget : {"10GB", "'10 GB'", "' 10 GB'"}) {
    Outcome run = Remat("solve -a noremat -g chain:n=4 --json -b " + budget);
    ASSERT_EQ(run.status, 0) << budget << "\n" << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["budget_bytes"], 10000000000)
        << budget;
  }
  ExpectRefused(Remat("solve -a noremat -g chain:n=4 -b ''"),
                "--budget: empty; expected a byte count", "solve empty");
  ExpectRefused(Remat("solve -a noremat -g chain:n=4 -b '  '"),
                "--budget: empty", "solve blank");
  std::string schedule = Write("s.txt", "c 0\n");
  ExpectRefused(Remat("validate -g chain:n=4 -s " + schedule + " -b ''"),
                "--budget: empty", "validate empty");
}

TEST_F(Cli, GraphsWithoutNodesOrTargetsOrWithASelfGradientAreRefused) {
  ExpectRefused(Remat("graph info " + Write("empty.json", NativeGraph("[]"))),
                "empty.json: the graph has no nodes", "empty");
  ExpectRefused(
      Remat("solve -a noremat -g " +
            Write("no_target.json",
                  NativeGraph("[{\"id\": 0, \"mem\": 1, \"cost\": 1, "
                              "\"inputs\": [], \"target\": false}]"))),
      "no_target.json: the graph has no target", "no target");
  ExpectRefused(Remat("graph info " +
                      Write("self.json",
                            NativeGraph("[{\"id\": 0, \"mem\": 1, \"cost\": 1, "
                                        "\"inputs\": [], \"grad_of\": 0}]"))),
                "self.json: node 0: grad_of names the node itself", "self");
}

TEST_F(Cli, OptionErrorsAreOneLineNamingTheSubcommand) {
  ExpectRefused(Remat("solve -a noremat -g chain:n=4 --frob"),
                "remat solve: The following argument was not expected: --frob "
                "(see remat solve --help)",
                "unknown option");
  ExpectRefused(Remat("solve -g chain:n=4"),
                "remat solve: --algorithm is required", "missing option");
  ExpectRefused(Remat("frobnicate"),
                "remat: unknown subcommand 'frobnicate' (known: list, graph, "
                "solve, validate, sweep, merge)",
                "unknown subcommand");
  ExpectRefused(Remat("graph frob x"),
                "remat graph: unknown subcommand 'frob' (known: info, convert)",
                "unknown graph subcommand");
  ExpectRefused(Remat("graph"), "remat graph: A subcommand is required",
                "no graph subcommand");
  ExpectRefused(Remat("sweep --budgets 0"), "remat sweep: --budgets", "range");
}

TEST_F(Cli, MessagesNameTheFileOnceAndEscapeBinaryBytes) {
  Outcome run =
      Remat("graph info " + Write("neg.json", NativeGraph("[]", "-5")));
  ExpectRefused(run, "neg.json: static_bytes is negative (-5)", "static");
  EXPECT_EQ(run.err.find("neg.json"), run.err.rfind("neg.json")) << run.err;
  // Found by fuzzing: a number beyond double's range aborted the reader.
  ExpectRefused(
      Remat("graph info " +
            Write("big.json", NativeGraph("[{\"id\": 0, \"mem\": 1e999, "
                                          "\"cost\": 1, \"inputs\": []}]"))),
      "big.json: not valid JSON: number overflow parsing '1e999'", "overflow");
  // A binary schedule: its bytes are escaped, never sent to the terminal.
  std::string garbage =
      Write("garbage.txt", std::string("c 0\n\x1b[2J\xff\xfe\x01", 11));
  run = Remat("validate -g chain:n=4 -s " + garbage);
  ExpectRefused(run,
                "garbage.txt:2: expected 'c <id>', 'f <id>', 'o <id>', 'p <id>' or 'w <id>': "
                "'\\x1b[2J\\xff\\xfe\\x01'",
                "garbage");
}

TEST_F(Cli, ValidateNamesTheScheduleLineOfAnIllegalEvent) {
  // f2 (id 1) reads f1 (id 0), which was freed: the fifth line.
  std::string schedule = Write("s.txt", "# chain:n=4\nc 0\n\nf 0\nc 1\n");
  Outcome run = Remat("validate -g chain:n=4 -s " + schedule + " --json");
  EXPECT_EQ(run.status, 1) << run.err;
  auto error = nlohmann::json::parse(run.out)["error"];
  EXPECT_EQ(error["line"], 5);
  EXPECT_EQ(error["event"], 2);
}

}  // namespace
}  // namespace remat
