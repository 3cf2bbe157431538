// The sweep's journal (resume) and `remat merge`, in-process: what a
// resumed sweep takes from a journal, which journal lines it refuses, and
// shards merged into the unsharded results. Kill -9 and MPI are tested
// through the binary (tests/sweep_*_test.sh).
#include "harness/sweep_journal.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/sweep.h"
#include "harness/sweep_merge.h"
#include "model/errors.h"
#include "model/file_io.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

class Journal : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format(
               "remat_journal_test_{}_{}", getpid(),
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }
  fs::path dir_;
};

SweepConfig Small() {
  SweepConfig config;
  config.graph_specs = {"chain:n=8", "chain:n=5"};
  config.algorithm_specs = {"noremat", "revolve", "checkpoint_last"};
  config.budgets_per_graph = 4;
  config.threads = 1;
  return config;
}

nlohmann::json Stable(nlohmann::json results) {
  results.erase("context");
  for (auto& run : results["runs"]) {
    for (auto& point : run["points"]) point.erase("solve_seconds");
  }
  return results;
}

size_t Lines(const std::string& path) {
  const std::string text = ReadFile(path);
  return std::count(text.begin(), text.end(), '\n');
}

TEST_F(Journal, HasAHeaderAndALinePerTaskAndResumesWithoutRunningAgain) {
  SweepConfig config = Small();
  config.journal_path = Path("j");
  const nlohmann::json first = RunSweep(config);
  // noremat and checkpoint_last: one task per graph; revolve: one per budget.
  const size_t tasks = 2 * 2 + 4 + 4;
  ASSERT_EQ(Lines(config.journal_path), 1 + tasks);
  const JournalContents journal = ReadJournal(config.journal_path);
  EXPECT_EQ(journal.header["configuration"], first["context"]["configuration"]);
  EXPECT_EQ(journal.entries.size(), tasks);

  config.resume = true;
  const nlohmann::json resumed = RunSweep(config);
  EXPECT_EQ(resumed["context"]["resumed_tasks"], tasks);
  EXPECT_EQ(resumed["context"]["tasks_run"], 0);
  EXPECT_EQ(Lines(config.journal_path), 1 + tasks);  // nothing appended
  EXPECT_EQ(Stable(first).dump(), Stable(resumed).dump());
}

TEST_F(Journal, IgnoresAnIncompleteLastLineAndRefusesACorruptEarlierOne) {
  SweepConfig config = Small();
  config.journal_path = Path("j");
  RunSweep(config);
  const std::string text = ReadFile(config.journal_path);
  fs::copy_file(config.journal_path, Path("j.whole"));
  const size_t last_line = text.rfind('\n', text.size() - 2) + 1;
  {
    std::ofstream out(config.journal_path, std::ios::trunc);
    out << text.substr(0, last_line + 10);  // a line cut short
  }
  JournalContents journal = ReadJournal(config.journal_path);
  EXPECT_EQ(journal.valid_bytes, last_line);
  config.resume = true;
  const nlohmann::json resumed = RunSweep(config);
  EXPECT_EQ(resumed["context"]["tasks_run"], 1);
  EXPECT_EQ(Lines(config.journal_path), Lines(Path("j.whole")));

  std::string corrupt = text;
  corrupt.replace(text.find('\n') + 1, 1, "[");  // line 2 of many
  {
    std::ofstream out(config.journal_path, std::ios::trunc);
    out << corrupt;
  }
  EXPECT_THROW(ReadJournal(config.journal_path), InputError);
  EXPECT_THROW(RunSweep(config), InputError);
}

// A second sweep on the same journal once renamed a new one over it
// while the first kept appending to the deleted file; the first's points
// were lost. The second is now refused before it reads or writes.
TEST_F(Journal, IsOwnedByOneSweepAtATime) {
  const nlohmann::json configuration = {{"budgets_per_graph", 1}};
  const nlohmann::json graphs = nlohmann::json::array();
  {
    SweepJournal first(Path("j"), configuration, graphs, /*resume=*/false);
    EXPECT_TRUE(fs::exists(Path("j.lock")));
    const std::string header = ReadFile(Path("j"));
    for (bool resume : {false, true}) {
      try {
        SweepJournal second(Path("j"), {{"budgets_per_graph", 2}}, graphs,
                            resume);
        FAIL() << "a second journal on the same path";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "/j: in use by another sweep (it holds "),
                  std::string::npos)
            << e.what();
      }
    }
    EXPECT_EQ(ReadFile(Path("j")), header);
    // Another path is another journal.
    SweepJournal other(Path("k"), configuration, graphs, false);
  }
  // Released and removed with the journal's owner.
  EXPECT_FALSE(fs::exists(Path("j.lock")));
  EXPECT_FALSE(fs::exists(Path("k.lock")));
  SweepJournal again(Path("j"), configuration, graphs, false);
}

TEST_F(Journal, RefusesToResumeAnotherConfiguration) {
  SweepConfig config = Small();
  config.journal_path = Path("j");
  RunSweep(config);
  config.resume = true;
  config.timeout_seconds = 30;
  try {
    RunSweep(config);
    FAIL() << "resumed a journal with another time limit";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("timeout_seconds differs"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Journal, ShardsMergeIntoTheUnshardedResults) {
  SweepConfig config = Small();
  const nlohmann::json whole = RunSweep(config);
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    config.shard_index = i;
    config.shard_count = 3;
    parts.push_back(Path(fmt::format("s{}.json", i)));
    const nlohmann::json shard = RunSweep(config);
    WriteFileAtomically(parts.back(),
                        [&](std::ostream& out) { out << shard.dump(); });
  }
  const nlohmann::json merged = MergeSweeps(parts, "test");
  EXPECT_EQ(merged["context"]["missing_points"], 0);
  EXPECT_EQ(Stable(whole).dump(), Stable(merged).dump());

  parts.pop_back();
  EXPECT_GT(MergeSweeps(parts, "test")["context"]["missing_points"], 0);
}

}  // namespace
}  // namespace remat
