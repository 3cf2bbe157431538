// remat merge — one results file from the results files or journals of
// parts of one sweep (the shards of a job array, a killed run's journal).
#include "harness/cli/commands.h"
#include "harness/cli/output.h"
#include "harness/sweep_merge.h"
#include "model/file_io.h"
#include "model/json_text.h"

namespace remat::cli {

void AddMergeCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "merge",
      "Merge results files or journals of one sweep configuration (shards, "
      "interrupted runs) into one results file; files of another "
      "configuration or code version are refused (exit 2)");
  auto files = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("files", *files, "results files or journals")->required();
  cmd->add_option("-o,--out", *out, "merged results file ('-': stdout)")
      ->required();
  auto as_json = AddJsonFlag(cmd);
  cmd->callback([=, &exit_code] {
    RefuseOutputThatIsAnInput(*out, "merge: -o", *files);
    const Json results = MergeSweeps(*files, CommandLine());
    WriteFileAtomically(
        *out, [&](std::ostream& os) { os << DumpJson(results, 2) << "\n"; });
    if (*out != "-") {
      Print({{"out", *out},
             {"files", files->size()},
             {"runs", results["runs"].size()},
             {"missing_points", results["context"]["missing_points"]}},
            *as_json);
    }
    exit_code = kExitOk;
  });
}

}  // namespace remat::cli
