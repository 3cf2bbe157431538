// The fixture of the command-line tests: runs the built `remat` binary in
// a fresh temporary folder and captures its exit status, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/file_io.h"

namespace remat::testing {

struct Outcome {
  int status;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("remat_cli_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `remat <args>` through the shell (so `args` may quote), killed
  // after 60 s so that a hang fails the test instead of blocking it;
  // `wrapper` (a command that runs the rest, e.g. setpriv) goes before it.
  Outcome Remat(const std::string& args, const std::string& wrapper = "") {
    const std::string err_file = (dir_ / "stderr.txt").string();
    const std::string command = "timeout -s KILL 60 " + wrapper +
                                (wrapper.empty() ? "" : " ") +
                                std::string(REMAT_BINARY) + " " + args + " 2>" +
                                err_file;
    Outcome run;
    FILE* pipe = popen(command.c_str(), "r");
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
      run.out.append(buffer, n);
    }
    int raw = pclose(pipe);
    run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    run.err = ReadFile(err_file);
    return run;
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::filesystem::path dir_;
};

}  // namespace remat::testing
