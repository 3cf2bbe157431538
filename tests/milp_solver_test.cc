// The staged MILP's two solvers: the model written as MPS is the model
// CBC solves in memory (same optimum when CBC reads the file back), HiGHS
// proves the same optima as CBC (chains at every budget, where binomial
// checkpointing gives the optimum, and branching fixtures), and without
// its executable solver=highs answers status error naming what is
// missing; a child runs without a kill time where the solve has no time
// limit.
#include <Cbc_C_Interface.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/child_process.h"
#include "algorithms/checkmate/highs_process.h"
#include "algorithms/checkmate/milp_files.h"
#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::Solve;

// Sets an environment variable for one scope. The isolated child inherits
// it, so it reaches FindHighs there too.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// CBC's optimum of the model as it reads it from `mps_text`.
double CbcOptimumOfMps(const std::string& mps_text) {
  // CoinMpsIO looks for PATH.mps when PATH has no extension.
  char path[] = "/tmp/remat-mps-test-XXXXXX.mps";
  const int fd = mkstemps(path, 4);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << mps_text;
  Cbc_Model* cbc = Cbc_newModel();
  EXPECT_EQ(Cbc_readMps(cbc, path), 0);
  std::remove(path);
  Cbc_setLogLevel(cbc, 0);
  Cbc_setParameter(cbc, "log", "0");
  Cbc_solve(cbc);
  EXPECT_TRUE(Cbc_isProvenOptimal(cbc));
  const double objective = Cbc_getObjValue(cbc);
  Cbc_deleteModel(cbc);
  return objective;
}

double CbcOptimumInMemory(const CheckmateModel& model) {
  Cbc_Model* cbc = Cbc_newModel();
  Cbc_loadProblem(cbc, model.num_cols(), model.num_rows(),
                  model.col_starts().data(), model.row_index().data(),
                  model.values().data(), model.col_lower().data(),
                  model.col_upper().data(), model.objective().data(),
                  model.row_lower().data(), model.row_upper().data());
  for (int col : model.integer_cols()) Cbc_setInteger(cbc, col);
  Cbc_setLogLevel(cbc, 0);
  Cbc_setParameter(cbc, "log", "0");
  Cbc_solve(cbc);
  EXPECT_TRUE(Cbc_isProvenOptimal(cbc));
  const double objective = Cbc_getObjValue(cbc);
  Cbc_deleteModel(cbc);
  return objective;
}

// The MPS file holds the model: read back by CBC, it has the same columns,
// rows and optimum as the model loaded from memory, at budgets where
// recomputation is needed (so that the memory rows bind) and, with
// moccasin's cap rows, where the cap binds too.
TEST(MilpFiles, MpsReadBackByCbcHasTheSameOptimum) {
  const Graph g = LoadGraph("chain:n=5");
  for (int cap : {0, 2}) {
    for (int64_t budget : {4, 5, 7}) {
      const CheckmateModel model(g, budget, NoRematOrder(g), cap);
      std::ostringstream mps;
      WriteMps(model, mps);
      EXPECT_DOUBLE_EQ(CbcOptimumOfMps(mps.str()), CbcOptimumInMemory(model))
          << "budget " << budget << " cap " << cap;
    }
  }
}

// A start point written as a HiGHS solution file reads back column by
// column; a file that names a column the model lacks is refused.
TEST(MilpFiles, HighsSolutionFilesRoundTrip) {
  const Graph g = LoadGraph("chain:n=3");
  const CheckmateModel model(g, NoRematPeak(g), NoRematOrder(g));
  std::vector<double> x(model.num_cols());
  for (int c = 0; c < model.num_cols(); ++c) x[c] = c % 3 == 0 ? 1 : 0.5;
  std::stringstream file;
  WriteHighsStart(model, x, file);
  const HighsSolution read = ReadHighsSolution(file, model.num_cols());
  EXPECT_EQ(read.model_status, "Unknown");
  ASSERT_TRUE(read.x.has_value());
  EXPECT_EQ(*read.x, x);
  std::stringstream other;
  WriteHighsStart(model, x, other);
  EXPECT_THROW(ReadHighsSolution(other, model.num_cols() - 1),
               std::runtime_error);
}

// HiGHS and CBC prove the same optimum of every staged model below: chains
// from the memory lower bound to the NoRemat peak (where the optimum is
// binomial checkpointing's, tests/moccasin_test.cc) and graphs with
// branches and skip connections; and they agree where no staged schedule
// fits (status infeasible) too.
TEST(MilpSolvers, HighsProvesCbcsOptima) {
  ASSERT_TRUE(FindHighs().has_value())
      << "the HiGHS executable is missing (scripts/setup.sh installs "
         "highsbox into the project's environment)";
  int compared = 0;
  for (const std::string& spec :
       {std::string("chain:n=6"),
        testing::SourceDir() + "/tests/fixtures/diamond.json",
        testing::SourceDir() + "/tests/fixtures/skip_connections.json"}) {
    const Graph g = LoadGraph(spec);
    const int64_t lb = MemoryLowerBound(g);
    const int64_t peak = NoRematPeak(g);
    const int64_t step = std::max<int64_t>(1, (peak - lb) / 3);
    for (int64_t budget = lb; budget <= peak; budget += step) {
      for (const char* algorithm : {"checkmate_milp", "moccasin"}) {
        const SolveResult cbc = Solve(algorithm, g, budget, {"solver=cbc"});
        const SolveResult highs = Solve(algorithm, g, budget, {"solver=highs"});
        const std::string where =
            fmt::format("{} {} at {}", algorithm, spec, budget);
        ASSERT_EQ(highs.status, cbc.status) << where << ": " << highs.message;
        EXPECT_EQ(highs.optimal, cbc.optimal) << where;
        // Where both prove that no schedule of moccasin's class fits, both
        // answer with the same heuristic's schedule outside it.
        const bool outside = cbc.extra.contains("outside_class");
        ASSERT_EQ(highs.extra.contains("outside_class"), outside) << where;
        if (outside) {
          EXPECT_EQ(highs.extra["outside_class"], cbc.extra["outside_class"]);
          EXPECT_EQ(highs.cost, cbc.cost) << where;
          EXPECT_FALSE(cbc.optimal) << where;
        } else if (cbc.status == Status::kFeasible) {
          EXPECT_TRUE(highs.optimal) << where;
          EXPECT_EQ(highs.cost, cbc.cost) << where;
          EXPECT_EQ(highs.staged_lower_bound_cost, cbc.staged_lower_bound_cost)
              << where;
          // At the base cost the warm start answers with no solver run.
          if (cbc.cost == BaseCost(g)) {
            EXPECT_FALSE(highs.extra.contains("milp_solver")) << where;
          } else {
            EXPECT_EQ(highs.extra["milp_solver"], "highs") << where;
          }
        }
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 12);
}

int64_t Binomial(int64_t a, int64_t b) {
  if (b < 0 || b > a) return 0;
  int64_t c = 1;
  for (int64_t i = 1; i <= b; ++i) c = c * (a - b + i) / i;
  return c;
}

// Known answers on chains, recomputation forced at all but the largest
// budget: binomial checkpointing's optimal cost n + 1 + r l - C(s + r,
// r - 1), with s = budget - 2 slots, l = n + 1 steps and r the least
// repetition number with C(s + r, s) >= l, which the staged class reaches
// on chains (Griewank and Walther; tests/moccasin_test.cc).
// HiGHS writes Highs.log into its working folder by default; none may
// appear in the caller's.
int64_t BinomialCheckpointingCost(int64_t n, int64_t budget) {
  const int64_t l = n + 1, s = budget - 2;
  int64_t r = 0;
  while (Binomial(s + r, s) < l) ++r;
  return n + 1 + r * l - Binomial(s + r, r - 1);
}

TEST(MilpSolvers, HighsMatchesBinomialCheckpointingOnChains) {
  ASSERT_TRUE(FindHighs().has_value());
  std::filesystem::remove("Highs.log");
  for (int64_t n : {5, 7}) {
    const Graph g = LoadGraph(fmt::format("chain:n={}", n));
    for (int64_t budget = 3; budget <= n + 2; ++budget) {
      const SolveResult highs =
          Solve("checkmate_milp", g, budget, {"solver=highs"});
      ASSERT_EQ(highs.status, Status::kFeasible) << highs.message;
      EXPECT_TRUE(highs.optimal);
      EXPECT_EQ(highs.cost, BinomialCheckpointingCost(n, budget))
          << "n=" << n << " budget " << budget;
    }
  }
  EXPECT_FALSE(std::filesystem::exists("Highs.log"));
}

// Without the executable, solver=highs is one result with status error
// that names what is missing and how to get it, for both algorithms;
// solver=cbc still answers.
TEST(MilpSolvers, MissingHighsIsAnErrorNamingIt) {
  const ScopedEnv no_highs("REMAT_HIGHS", "");
  EXPECT_FALSE(FindHighs().has_value());
  const Graph g = LoadGraph("chain:n=5");
  for (const char* algorithm : {"checkmate_milp", "moccasin"}) {
    const SolveResult highs = Solve(algorithm, g, 5, {"solver=highs"});
    EXPECT_EQ(highs.status, Status::kError) << algorithm;
    EXPECT_NE(highs.message.find("HiGHS executable `highs` was not found"),
              std::string::npos)
        << highs.message;
    EXPECT_NE(highs.message.find("highsbox"), std::string::npos);
    const SolveResult cbc = Solve(algorithm, g, 5, {"solver=cbc"});
    EXPECT_EQ(cbc.status, Status::kFeasible) << cbc.message;
  }
}

// REMAT_HIGHS naming a program that is not HiGHS (it exits at once with
// an error) is an error with that program's reason, not a crash or a
// silent warm start.
TEST(MilpSolvers, ABrokenHighsIsAnError) {
  const ScopedEnv broken("REMAT_HIGHS", "/bin/false");
  const Graph g = LoadGraph("chain:n=5");
  const SolveResult highs = Solve("checkmate_milp", g, 5, {"solver=highs"});
  EXPECT_EQ(highs.status, Status::kError);
  EXPECT_NE(highs.message.find("/bin/false exited with status 1"),
            std::string::npos)
      << highs.message;
}

// solver=auto (the default) is CBC first: where CBC proves the optimum
// within its share of the time, that is the answer, binomial
// checkpointing's cost on chains, and HiGHS never runs (a broken one
// changes nothing; at the NoRemat peak neither runs, the warm start
// costing the base cost); where CBC's share ends unsettled (chain:n=12 at 3
// units takes CBC 10 s, its share of a 2 s limit is 0.5 s), HiGHS goes on,
// and a broken one is an error naming it.
TEST(MilpSolvers, AutoIsCbcFirstThenHighs) {
  const ScopedEnv broken("REMAT_HIGHS", "/bin/false");
  const Graph chain = LoadGraph("chain:n=5");
  for (int64_t budget = 3; budget <= 7; ++budget) {
    const SolveResult settled = Solve("checkmate_milp", chain, budget);
    ASSERT_EQ(settled.status, Status::kFeasible) << settled.message;
    EXPECT_TRUE(settled.optimal);
    EXPECT_EQ(settled.extra.value("milp_solver", "none"),
              settled.cost == BaseCost(chain) ? "none" : "cbc")
        << budget;
    EXPECT_EQ(settled.cost, BinomialCheckpointingCost(5, budget)) << budget;
  }
  const SolveResult handed_on =
      Solve("checkmate_milp", LoadGraph("chain:n=12"), 3, {"solver=auto"}, 2);
  EXPECT_EQ(handed_on.status, Status::kError) << handed_on.message;
  EXPECT_NE(handed_on.message.find("/bin/false exited with status 1"),
            std::string::npos)
      << handed_on.message;
}

// A model beyond what the solvers settle in the time left
// (settle_nonzeros_per_second) is answered without them: HiGHS is broken
// here, so a valid answer shows that it was not run. On a chain the
// warm start is revolve's optimum; at the NoRemat peak it costs the base
// cost and answers before the rule (no LP), below it the bound is
// checkmate_lp's LP value at the budget (on a chain both stage in the one
// order there is).
TEST(MilpSolvers, BeyondTheSettleRateTheWarmStartAnswersWithTheLpBound) {
  const ScopedEnv broken("REMAT_HIGHS", "/bin/false");
  const Graph chain = LoadGraph("chain:n=5");
  const std::vector<std::string> skip = {"solver=highs",
                                         "settle_nonzeros_per_second=1"};
  const int64_t peak = NoRematPeak(chain);
  const SolveResult at_peak = Solve("checkmate_milp", chain, peak, skip);
  ASSERT_EQ(at_peak.status, Status::kFeasible) << at_peak.message;
  EXPECT_TRUE(at_peak.optimal);
  EXPECT_EQ(at_peak.cost, BaseCost(chain));
  EXPECT_EQ(at_peak.staged_lower_bound_cost, BaseCost(chain));
  EXPECT_EQ(at_peak.lower_bound_cost, BaseCost(chain));
  EXPECT_FALSE(at_peak.extra.contains("milp_solver"));
  EXPECT_NE(at_peak.message.find("base cost"), std::string::npos)
      << at_peak.message;

  const SolveResult below = Solve("checkmate_milp", chain, 3, skip);
  ASSERT_EQ(below.status, Status::kTimeout) << below.message;
  EXPECT_FALSE(below.optimal);
  EXPECT_TRUE(below.valid);
  EXPECT_EQ(below.cost, BinomialCheckpointingCost(5, 3));
  const SolveResult lp = Solve("checkmate_lp", chain, 3);
  ASSERT_TRUE(lp.staged_lower_bound_cost.has_value()) << lp.message;
  EXPECT_EQ(below.staged_lower_bound_cost, lp.staged_lower_bound_cost);
  EXPECT_LT(*below.staged_lower_bound_cost, below.cost);

  // With the rule off the broken solver runs, and says so.
  const SolveResult run =
      Solve("checkmate_milp", chain, 3,
            {"solver=highs", "settle_nonzeros_per_second=0"});
  EXPECT_EQ(run.status, Status::kError) << run.message;
}

// Beyond the settle rate the time the solver would have had goes to
// checkmate_lp's roundings, which answer where they beat the warm start:
// the answer is never dearer than checkmate_lp's from the same stage order
// (it was the warm start alone, up to 1.43% dearer than checkmate_lp on the
// corpus's U-Nets; here chen_sqrtn's staged schedule, 31% dearer).
TEST(MilpSolvers, BeyondTheSettleRateTheLpRoundingsAnswerWhereCheaper) {
  const ScopedEnv broken("REMAT_HIGHS", "/bin/false");
  const Graph unet = LoadGraph("unet:levels=2,base=4,batch=1,image=16");
  const int64_t budget = NoRematPeak(unet) * 7 / 10;
  const SolveResult sqrtn = Solve("chen_sqrtn", unet, budget);
  ASSERT_EQ(sqrtn.status, Status::kFeasible) << sqrtn.message;
  const SolveResult lp =
      Solve("checkmate_lp", unet, budget, {"warm_start=chen_sqrtn"});
  ASSERT_EQ(lp.status, Status::kFeasible) << lp.message;
  ASSERT_LT(lp.cost, sqrtn.cost);

  const SolveResult milp = Solve(
      "checkmate_milp", unet, budget,
      {"solver=highs", "settle_nonzeros_per_second=1", "warm_start=chen_sqrtn"});
  ASSERT_EQ(milp.status, Status::kTimeout) << milp.message;
  EXPECT_TRUE(milp.valid);
  EXPECT_EQ(milp.cost, lp.cost) << milp.message;
  EXPECT_EQ(milp.extra["answer"], "lp_rounding");
  EXPECT_EQ(milp.staged_lower_bound_cost, lp.staged_lower_bound_cost);
}

// The staged classes compute and free only: a warm-start schedule that
// moves values to host memory is no start, and not the answer where it is
// cheaper than the class's (its cost leaves out the copies' time). With
// vdnn as the only warm start, checkmate_milp answered vdnn's schedule,
// 100,352 bytes moved, at 30,000 bytes.
TEST(MilpSolvers, AWarmStartThatMovesValuesIsNeverTheAnswer) {
  const Graph unet = LoadGraph("unet:levels=2,base=4,batch=1,image=16");
  const SolveResult vdnn = Solve("vdnn", unet, 30000);
  ASSERT_EQ(vdnn.status, Status::kFeasible) << vdnn.message;
  ASSERT_TRUE(vdnn.timeline.contains("transfer_bytes"));
  const SolveResult milp =
      Solve("checkmate_milp", unet, 30000, {"warm_start=vdnn"}, 10);
  EXPECT_FALSE(milp.timeline.contains("transfer_bytes")) << milp.message;
  EXPECT_EQ(milp.message.find("vdnn's schedule"), std::string::npos)
      << milp.message;
}

// A solve without a time limit runs its solver's child without one: the
// unbounded deadline's 1e18 s once overflowed the kill time, and every
// child was killed at once ("ran past its 1000000000000000000.0 s limit").
TEST(ChildProcess, NoLimitKillsNothing) {
  const TempDir dir("remat-child-test-");
  ASSERT_FALSE(dir.path().empty());
  const ChildRun run =
      RunChild("sleep", {"/bin/sh", "-c", "sleep 0.2"}, {}, dir.path(), 1e18);
  EXPECT_EQ(run.error, "");
  EXPECT_EQ(run.exit_status, 0);
}

// A HiGHS whose time limit runs out while it still reads the model exits
// with status 255 ("Error loading file", seen with 0.2 s on a 10 MB model):
// that is the time limit, not a broken solver, so the warm start stands
// (status timeout), as when HiGHS stops while solving.
TEST(MilpSolvers, TimeOutWhileReadingTheModelKeepsTheWarmStart) {
  const std::filesystem::path fake =
      std::filesystem::temp_directory_path() /
      fmt::format("remat_highs_parser_timeout_{}.sh", getpid());
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\n"
           "echo 'WARNING: Free format reader reached time_limit while "
           "parsing the input file'\n"
           "echo 'ERROR:   Parser reached timeout'\n"
           "echo 'Error loading file'\n"
           "exit 255\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const std::string fake_path = fake.string();
  const ScopedEnv slow("REMAT_HIGHS", fake_path.c_str());
  const Graph g = LoadGraph("chain:n=5");
  const SolveResult highs = Solve("checkmate_milp", g, 5, {"solver=highs"});
  std::filesystem::remove(fake);
  EXPECT_EQ(highs.status, Status::kTimeout) << highs.message;
  EXPECT_TRUE(highs.valid) << highs.message;
  EXPECT_LE(highs.peak_bytes, 5);
  EXPECT_NE(highs.message.find("warm start"), std::string::npos)
      << highs.message;
}

}  // namespace
}  // namespace remat
