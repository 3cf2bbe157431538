// The output rule of every command that writes a file: what is not a
// regular file (a device, a FIFO, a link through /proc such as
// /dev/stdout) is written in place, never renamed over; an output that is
// one of the command's inputs is refused; a failed write or close of stdout
// and a file size limit are one line and exit status 2, with no temporary
// left behind; file names derived from inputs never collide. No test
// touches a real device: devices are made with mknod in a temporary folder.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "model/file_io.h"
#include "tests/cli_support.h"

namespace remat {
namespace {

namespace fs = std::filesystem;
using testing::Outcome;

// Exit 2 and one printable line on stderr holding `expected`.
void ExpectOneLine(const Outcome& run, const std::string& expected,
                   const std::string& what) {
  EXPECT_EQ(run.status, 2) << what << "\n" << run.err;
  EXPECT_NE(run.err.find(expected), std::string::npos) << what << "\n"
                                                       << run.err;
  // A sweep's progress and table come first; one line is remat's error.
  size_t errors = 0;
  for (size_t at = run.err.find("remat:"); at != std::string::npos;
       at = run.err.find("remat:", at + 1)) {
    ++errors;
  }
  EXPECT_EQ(errors, 1u) << what << "\n" << run.err;
  const size_t previous =
      run.err.size() < 2 ? std::string::npos
                         : run.err.rfind('\n', run.err.size() - 2);
  const size_t last = previous == std::string::npos ? 0 : previous + 1;
  EXPECT_NE(run.err.find(expected, last), std::string::npos)
      << what << ": not on the last line\n"
      << run.err;
}

class OutputRule : public testing::Cli {
 protected:
  // A character device node in the test's folder (1,3 is null, 1,7 full),
  // or "" where this process may not make one.
  std::string Device(const std::string& name, unsigned minor) {
    const std::string path = (dir_ / name).string();
    if (mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) return "";
    return path;
  }
  bool IsCharDevice(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
  }
  // The names in the test's folder that hold ".tmp".
  std::vector<std::string> Temporaries() {
    std::vector<std::string> left;
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.find(".tmp") != std::string::npos) left.push_back(name);
    }
    return left;
  }
  std::string Read(const std::string& path) { return ReadFile(path); }
};

const char* kSweep =
    "sweep --graphs chain:n=6 --algorithms noremat --budgets 2 --threads 1";

TEST_F(OutputRule, DevicesAreWrittenInPlaceNeverReplaced) {
  const std::string null = Device("null", 3);
  if (null.empty()) GTEST_SKIP() << "mknod is not allowed here";
  const std::string graph = (dir_ / "g.json").string();
  ASSERT_EQ(Remat("graph convert chain:n=6 --to json -o " + graph).status, 0);
  const std::vector<std::string> commands = {
      "graph convert chain:n=6 --to json -o " + null,
      "graph convert chain:n=6 --to dot -o " + null,
      "solve -a revolve -g chain:n=6 --schedule-out " + null,
      std::string(kSweep) + " -o " + null + " --journal " +
          (dir_ / "j").string(),
      "merge " + graph + " -o " + null,  // refused (not results), no write
  };
  for (const std::string& command : commands) {
    Remat(command);
    EXPECT_TRUE(IsCharDevice(null)) << command;
    EXPECT_TRUE(Temporaries().empty()) << command;
    fs::remove(dir_ / "j");
  }
  // A full device: the write fails in place with the system's reason.
  const std::string full = Device("full", 7);
  ExpectOneLine(Remat("graph convert chain:n=6 --to json -o " + full),
                "full: write failed (No space left on device)", "full");
  EXPECT_TRUE(IsCharDevice(full));
}

TEST_F(OutputRule, FifosAndLinksToStdoutAreWrittenInPlace) {
  // A FIFO with a reader gets the document; it stays a FIFO.
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  const std::string copy = (dir_ / "copy.json").string();
  const Outcome run = Remat("graph convert chain:n=6 --to json -o " + fifo +
                            " & cat " + fifo + " > " + copy + "; wait");
  EXPECT_EQ(run.status, 0) << run.err;
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_NE(Read(copy).find("\"rematbench-graph\""), std::string::npos);

  // A link to /proc/self/fd/1 while stdout is a file: the link stays, the
  // document goes to the file, followed by the summary.
  const std::string link = (dir_ / "stdout").string();
  fs::create_symlink("/proc/self/fd/1", link);
  const std::string out = (dir_ / "out.txt").string();
  for (const std::string& command :
       {"graph convert chain:n=6 --to json -o " + link,
        "solve -a revolve -g chain:n=6 --schedule-out " + link,
        std::string(kSweep) + " -o " + link + " --journal " +
            (dir_ / "j2").string()}) {
    const Outcome written = Remat(command + " > " + out);
    EXPECT_EQ(written.status, 0) << command << "\n" << written.err;
    EXPECT_TRUE(fs::is_symlink(link)) << command;
    EXPECT_EQ(fs::read_symlink(link), "/proc/self/fd/1") << command;
    const std::string text = Read(out);
    EXPECT_TRUE(text.find("\"rematbench-graph\"") != std::string::npos ||
                text.find("c 0\nc 1\n") != std::string::npos ||
                text.find("\"runs\"") != std::string::npos)
        << command << "\n"
        << text.substr(0, 300);
    EXPECT_TRUE(Temporaries().empty()) << command;
  }

  // A symbolic link to a regular file is kept; the file is replaced.
  const std::string target = Write("target.json", "old");
  const std::string to_file = (dir_ / "to_file.json").string();
  fs::create_symlink(target, to_file);
  EXPECT_EQ(Remat("graph convert chain:n=6 --to json -o " + to_file).status,
            0);
  EXPECT_TRUE(fs::is_symlink(to_file));
  EXPECT_NE(Read(target).find("\"rematbench-graph\""), std::string::npos);
  EXPECT_TRUE(Temporaries().empty());
}

TEST_F(OutputRule, AnOutputThatIsAnInputIsRefused) {
  const std::string graph = (dir_ / "g.json").string();
  ASSERT_EQ(Remat("graph convert chain:n=6 --to json -o " + graph).status, 0);
  const std::string before = Read(graph);
  const std::string link = (dir_ / "link.json").string();
  fs::create_symlink(graph, link);
  ExpectOneLine(Remat("solve -a revolve -g " + graph + " --schedule-out " +
                      graph),
                "solve: --schedule-out " + graph +
                    " is one of the command's inputs",
                "solve");
  ExpectOneLine(
      Remat("solve -a revolve -g " + graph + " --schedule-out " + link),
      "is one of the command's inputs", "solve through a link");
  ExpectOneLine(
      Remat("graph convert " + graph + " --to dot -o " + graph),
      "graph convert: -o " + graph + " is one of the command's inputs",
      "convert");
  const std::string results = (dir_ / "r.json").string();
  ASSERT_EQ(Remat(std::string(kSweep) + " -o " + results).status, 0);
  const std::string results_before = Read(results);
  ExpectOneLine(Remat("merge " + results + " -o " + results),
                "merge: -o " + results + " is one of the command's inputs",
                "merge");
  EXPECT_EQ(Read(graph), before);
  EXPECT_EQ(Read(results), results_before);
  EXPECT_TRUE(Temporaries().empty());
}

TEST_F(OutputRule, AFailedWriteOrCloseOfStdoutIsOneLineAndStatusTwo) {
  std::string full = Device("full", 7);
  if (full.empty()) full = "/dev/full";  // written to, never replaced
  for (const std::string& command :
       {std::string("list --json"), std::string("list"),
        std::string("graph info chain:n=6"),
        std::string("solve -a revolve -g chain:n=6 --json"),
        std::string(kSweep), std::string(kSweep) + " --json",
        std::string("graph convert chain:n=6 --to json -o -")}) {
    ExpectOneLine(Remat(command + " > " + full),
                  "remat: stdout: write failed (No space left on device)",
                  command);
  }
}

TEST_F(OutputRule, AFileSizeLimitIsOneLineAndLeavesNoTemporary) {
  // ulimit -f counts 512-byte blocks in sh (1 KiB in bash); either way
  // 2 blocks are less than these documents. SIGXFSZ is left as the shell
  // has it: remat ignores it itself.
  const std::string big = (dir_ / "big.json").string();
  for (const std::string& command :
       {"graph convert chain:n=300 --to json -o " + big,
        "solve -a revolve -g chain:n=300 --schedule-out " + big,
        "sweep --graphs chain:n=300 --algorithms noremat --budgets 40 "
        "--threads 1 --journal " +
            (dir_ / "j").string() + " -o " + big}) {
    const Outcome run =
        Remat(command, "sh -c 'ulimit -f 2; exec \"$0\" \"$@\"'");
    EXPECT_EQ(run.status, 2) << command << "\n" << run.err;
    // (The sweep's journal reaches the limit first.)
    EXPECT_NE(run.err.find("write the journal (File too large)") ==
                      std::string::npos
                  ? run.err.find("big.json: write failed (File too large)")
                  : 0,
              std::string::npos)
        << command << "\n"
        << run.err;
    EXPECT_FALSE(fs::exists(big)) << command;
    EXPECT_TRUE(Temporaries().empty()) << command;
    fs::remove(dir_ / "j");
  }
}

TEST_F(OutputRule, ScheduleFileNamesNeverCollideBetweenGraphs) {
  // Three graph names that one replacement character made one file name.
  const std::string chain =
      "\"nodes\": [{\"id\": 0, \"mem\": 1, \"cost\": 1, \"kind\": "
      "\"forward\", \"inputs\": []}, {\"id\": 1, \"mem\": MEM, \"cost\": 1, "
      "\"inputs\": [0]}]}";
  std::vector<std::string> specs;
  int mem = 2;
  for (const std::string name : {"a/b", "a_b", "a b"}) {
    std::string nodes = chain;
    nodes.replace(nodes.find("MEM"), 3, std::to_string(mem++));
    specs.push_back(Write(
        fmt::format("g{}.json", mem),
        "{\"format\": \"rematbench-graph\", \"version\": 1, \"name\": \"" +
            name + "\", " + nodes));
  }
  const std::string results = (dir_ / "r.json").string();
  const Outcome run = Remat(
      "sweep --algorithms noremat --budgets 1 --threads 1 --schedules-dir " +
      (dir_ / "s").string() + " -o " + results + " --graphs " + specs[0] +
      "," + specs[1] + "," + specs[2]);
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json doc = nlohmann::json::parse(Read(results));
  std::set<std::string> files;
  int points = 0;
  for (const auto& r : doc["runs"]) {
    for (const auto& point : r["points"]) {
      ASSERT_TRUE(point.contains("schedule_file")) << point.dump();
      files.insert(point["schedule_file"].get<std::string>());
      ++points;
    }
  }
  EXPECT_EQ(points, 3);
  EXPECT_EQ(files.size(), 3u);
}

TEST_F(OutputRule, ThreadsThatCannotStartAreOneLineAndStatusTwo) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ulimit -v leaves no room for a sanitizer's shadow memory";
#endif
  // 1024 thread stacks (8 MiB each by default) do not fit in 1.5 GB of
  // address space: libgomp ended the sweep with exit 1, the tool's
  // "negative answer", and a line of its own.
  const Outcome run = Remat(
      "sweep --graphs chain:n=8 --algorithms noremat --budgets 2 "
      "--threads 1024",
      "sh -c 'ulimit -s 8192; ulimit -v 1500000; exec \"$0\" \"$@\"'");
  ExpectOneLine(run, "remat: sweep: cannot start 1024 threads (", "threads");
  EXPECT_NE(run.err.find("use fewer --threads"), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
}

TEST_F(OutputRule, AJournalThatIsNoRegularFileIsRefusedAtOnce) {
  const std::string fifo = (dir_ / "journal").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  const auto start = std::chrono::steady_clock::now();
  ExpectOneLine(Remat(std::string(kSweep) + " --journal " + fifo),
                "sweep: --journal " + fifo + ": not a regular file (a pipe)",
                "fifo");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  const std::string null = Device("null", 3);
  if (!null.empty()) {
    ExpectOneLine(Remat(std::string(kSweep) + " --journal " + null),
                  "not a regular file (a character device)", "device");
    EXPECT_TRUE(IsCharDevice(null));
  }
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

}  // namespace
}  // namespace remat
