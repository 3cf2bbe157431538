// The schedule text format: reading, writing, and refusing bad lines.
#include <gtest/gtest.h>

#include <sstream>

#include "model/errors.h"
#include "model/schedule.h"

namespace remat {
namespace {

Schedule Parse(const std::string& text, int32_t num_nodes = 10) {
  std::istringstream in(text);
  return ParseScheduleText(in, "s.txt", num_nodes);
}

std::string ErrorOf(const std::string& text) {
  try {
    Parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleText, ReadsEventsSkippingCommentsAndBlankLines) {
  Schedule s = Parse("# a comment\n\nc 0\n  c 3  \r\nf 0\nc\t2\n");
  EXPECT_EQ(s, (Schedule{Event::Compute(0), Event::Compute(3), Event::Free(0),
                         Event::Compute(2)}));
}

TEST(ScheduleText, WritesWhatItReads) {
  Schedule s = {Event::Compute(1), Event::Offload(1), Event::Wait(1),
                Event::Compute(0), Event::Prefetch(1), Event::Free(1)};
  std::ostringstream out;
  WriteScheduleText(out, s);
  EXPECT_EQ(out.str(), "c 1\no 1\nw 1\nc 0\np 1\nf 1\n");
  EXPECT_EQ(Parse(out.str()), s);
}

TEST(ScheduleText, RefusesBadLinesNamingTheLine) {
  EXPECT_NE(ErrorOf("c 1\nx 2\n").find(
                "s.txt:2: expected 'c <id>', 'f <id>', 'o <id>', 'p <id>' or 'w <id>'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("c 1\nc two\n").find("s.txt:2: node id is not an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf("c 1x\n").find("s.txt:1: node id is not an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf("\nc 10\n").find("s.txt:2: node 10 is not in the graph"),
            std::string::npos);
  EXPECT_NE(ErrorOf("f -1\n").find("s.txt:1: node -1 is not in the graph"),
            std::string::npos);
  EXPECT_NE(ErrorOf("c 99999999999999999999\n").find("s.txt:1:"),
            std::string::npos);
  EXPECT_NE(ErrorOf("compute 1\n").find("s.txt:1:"), std::string::npos);
}

}  // namespace
}  // namespace remat
