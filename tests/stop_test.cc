// Readers under a stop (model/stop.h): each stage of reading a large graph
// (the file, the JSON text, its lines, the graph's nodes) and a schedule's
// text ends with Stopped once a stop is requested, which `remat` and the
// Python module report as an interrupt; once it is cleared, the same input
// reads whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "graphs/importers/text_lines.h"
#include "model/file_io.h"
#include "model/graph_json.h"
#include "model/graph_source.h"
#include "model/json_text.h"
#include "model/schedule.h"
#include "model/stop.h"

namespace remat {
namespace {

// 131,073 nodes: above GraphBuilder's period of 2^16 nodes, and megabytes
// of text in every format.
constexpr char kLarge[] = "chain:n=65536";
constexpr int kLargeNodes = 131073;

class Stop : public ::testing::Test {
 protected:
  // The stop is process-wide: no test leaves it requested.
  void TearDown() override {
    ClearStop();
    std::filesystem::remove_all(dir_);
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir_);
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

 private:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() /
      ("remat_stop_test_" + std::to_string(::getpid()));
};

std::string TextOf(const std::string& spec, const std::string& format) {
  std::ostringstream out;
  WriteGraph(out, LoadGraph(spec), format);
  return out.str();
}

TEST_F(Stop, StopPollThrowsWithinItsPeriod) {
  StopPoll poll;
  for (int i = 0; i < 100000; ++i) poll.Tick();
  RequestStop();
  EXPECT_THROW(
      {
        for (int i = 0; i < 4096; ++i) poll.Tick();
      },
      Stopped);
}

TEST_F(Stop, ReadFileStops) {
  const std::string path = Write("g.json", TextOf(kLarge, "json"));
  RequestStop();
  EXPECT_THROW(ReadFile(path), Stopped);
  EXPECT_THROW(LoadGraph(path), Stopped);
  ClearStop();
  EXPECT_EQ(LoadGraph(path).num_nodes(), kLargeNodes);
}

TEST_F(Stop, JsonParsingStops) {
  // Below FindExcessNesting's period of 1 MiB: the parser's own polling.
  std::string small = "[0";
  for (int i = 0; i < 20000; ++i) small += ",1";
  small += "]";
  ASSERT_LT(small.size(), size_t{1} << 20);
  const std::string large = TextOf(kLarge, "json");
  ASSERT_GT(large.size(), size_t{2} << 20);
  RequestStop();
  EXPECT_THROW(ParseJson(small, "small.json"), Stopped);
  EXPECT_THROW(ParseJsonLine(small), Stopped);
  EXPECT_THROW(FindExcessNesting(large), Stopped);
  EXPECT_THROW(ParseGraphJson(large, "large.json"), Stopped);
  ClearStop();
  EXPECT_EQ(ParseJson(small, "small.json").size(), 20001u);
  EXPECT_EQ(ParseGraphJson(large, "large.json").num_nodes(), kLargeNodes);
}

TEST_F(Stop, TextLinesStop) {
  const std::string text = TextOf(kLarge, "remat2");
  TextLines lines(text, "g.remat2");
  std::string_view line;
  RequestStop();
  EXPECT_THROW(
      {
        while (lines.Next(line)) {
        }
      },
      Stopped);
  ClearStop();
  TextLines again(text, "g.remat2");
  int64_t count = 0;
  while (again.Next(line)) ++count;
  EXPECT_GT(count, kLargeNodes);
}

TEST_F(Stop, GraphBuildingStops) {
  // Generators and importers build through GraphBuilder.
  RequestStop();
  EXPECT_THROW(LoadGraph(kLarge), Stopped);
  ClearStop();
  EXPECT_EQ(LoadGraph(kLarge).num_nodes(), kLargeNodes);
}

TEST_F(Stop, ScheduleTextStops) {
  // `remat validate` reads schedules of millions of events.
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "c 0\nf 0\n";
  std::istringstream stopped(text);
  RequestStop();
  EXPECT_THROW(ParseScheduleText(stopped, "s.txt", 1, nullptr), Stopped);
  ClearStop();
  std::istringstream whole(text);
  EXPECT_EQ(ParseScheduleText(whole, "s.txt", 1, nullptr).size(), 20000u);
}

}  // namespace
}  // namespace remat
