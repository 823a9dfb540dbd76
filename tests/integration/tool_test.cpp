// The gpumemprof command on run directories produced by the fake-driver programs.
#include <gtest/gtest.h>

#include <sstream>

#include "command_options.h"
#include "harness.h"
#include "scenario_expected.h"

namespace gmp::test {
namespace {

TEST(Tool, ReportOfAScenarioRun) {
  Sandbox box;
  ASSERT_EQ(box.run({Paths::bin("prog_linked")}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  RunResult text = run_tool({"report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("device 0  Fake CUDA Device 0  (16.00 GiB total)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("allocated  peak 23.00 MiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("reserved   peak 24.00 MiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("leaks: live at exit 1 allocation, 8.00 MiB"), std::string::npos) << text.out;
  RunResult json = run_tool({"report", dir, "--json"});
  ASSERT_EQ(json.exit_code, 0);
  auto s = nlohmann::json::parse(json.out);
  EXPECT_EQ(s["rebuilt_from_trace"], false);
  EXPECT_EQ(s["devices"][0]["reserved_bytes"]["peak"], scenario::kDeviceReserved.peak);
}

// --help is status 0 with the usage on stdout, for the command and each subcommand. (What each
// refuses is in hostile_input_test.cpp.)
TEST(Tool, Help) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> rows = {
      {{"--help"}, "usage: gpumemprof COMMAND [ARGS]\n"},
      {{"run", "--help"}, "usage: gpumemprof run [options] -- COMMAND [ARGS...]\n"},
      {{"report", "--help"}, "usage: gpumemprof report DIR [--json] [--since T] [--until T]\n"},
      {{"diff", "--help"}, "usage: gpumemprof diff DIR_A DIR_B [--json] [--fail-if-peak-grows PERCENT]\n"},
      {{"export", "--help"}, "usage: gpumemprof export DIR --format FORMAT [-o FILE] [--since T] [--until T] "
                             "[--resolution D] [--min-size S]\n"},
      {{"check", "--help"}, "usage: gpumemprof check DIR_OR_ROOT [--max-peak SIZE] [--max-reserved SIZE] "
                            "[--max-leak SIZE]\n"},
      {{"html", "--help"}, "usage: gpumemprof html DIR -o FILE [--since T] [--until T]\n"},
      {{"oom", "--help"}, "usage: gpumemprof oom BUNDLE_OR_DIR [--json]\n"},
      {{"top", "--help"}, "usage: gpumemprof top [--interval SECONDS] [--root DIR] [--all] [--keep SECONDS]\n"},
  };
  for (const auto& [args, usage] : rows) {
    RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << args[0];
    EXPECT_EQ(flat(r.out).rfind(flat(usage), 0), 0u) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

// `gpumemprof help [COMMAND]` is the same text as --help; anything else is one line, status 2.
TEST(Tool, HelpCommandGivesTheSameTextAsHelpOption) {
  for (const char* command : {"run", "report", "oom", "export", "diff", "html", "check", "top"}) {
    RunResult via_help = run_tool({"help", command});
    RunResult via_option = run_tool({command, "--help"});
    EXPECT_EQ(via_help.exit_code, 0) << command << via_help.err;
    EXPECT_EQ(via_help.out, via_option.out) << command;
    EXPECT_EQ(via_help.err, "");
  }
  EXPECT_EQ(run_tool({"help"}).out, run_tool({"--help"}).out);
  RunResult bad = run_tool({"help", "frobnicate"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "gpumemprof help: unknown command 'frobnicate'; accepted: gpumemprof help "
                     "[run|report|oom|export|diff|html|check|top]\n");
  EXPECT_EQ(bad.out, "");
}

// What a new user missed in the help: the folded export, the flame graph; and report --help said
// call sites needed stacks turned on, which they are by default.
TEST(Tool, HelpNamesWhatTheCommandsDo) {
  EXPECT_NE(flat(run_tool({"--help"}).out).find(" export DIR --format F [-o FILE] the trace as csv, jsonl, perfetto, "
                                                "telemetry-v2, folded or memory-viz "),
            std::string::npos);
  EXPECT_NE(run_tool({"export", "--help"}).out.find("\n    folded        the call stacks"), std::string::npos);
  EXPECT_NE(flat(run_tool({"html", "--help"}).out).find("by kind, largest, call site and a flame graph;"), std::string::npos);
  const std::string report = run_tool({"report", "--help"}).out;
  EXPECT_EQ(report.find("With GPUMEMPROF_STACKS"), std::string::npos) << report;
  EXPECT_NE(flat(report).find("Call sites come from the stacks recorded by default (GPUMEMPROF_STACKS=0 turns them off)"),
            std::string::npos) << report;
}

using tool::all_command_options;
using tool::CommandOptions;
using tool::Option;
using tool::OptionSection;

// A value each placeholder of the tables takes.
std::string example_value(const std::string& placeholder, const Sandbox& box) {
  const std::map<std::string, std::string> examples = {
      {"SIZE", "1G"},   {"S", "1M"}, {"T", "1s"}, {"D", "1ms"}, {"N", "50"}, {"PERCENT", "10"},
      {"FILE", box.dir() + "/out"},
      {"ROOT", box.dir() + "/runs"}, {"DIR", box.dir() + "/dir"}, {"LEVEL", "info"}, {"FORMAT", "csv"}, {"LIMIT", "L4"},
      {"'CMD ARGS'", "/bin/true"}, {"PATH", Paths::shim()}, {"SECONDS", "1"}, {"NAME=SIZE", "activations=1G"}};
  return examples.at(placeholder);
}

// Every line of every --help fits 80 columns (the man page pastes them).
TEST(Tool, HelpFitsEightyColumns) {
  std::vector<std::vector<std::string>> helps = {{"--help"}};
  for (const CommandOptions* command : all_command_options()) helps.push_back({command->command, "--help"});
  for (const auto& args : helps) {
    const std::string help = run_tool(args).out;
    std::stringstream in(help);
    for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 80u) << args[0] << ": " << line;
  }
}

// Every option of every command's table (command_options.h) is named by the command's --help and
// taken by its parser: never "unknown option" (what else is said depends on the other arguments).
TEST(Tool, EveryOptionOfTheTablesIsInTheHelpAndTakenByTheParser) {
  Sandbox box;
  size_t options = 0;
  for (const CommandOptions* command : all_command_options()) {
    const std::string help = run_tool({command->command, "--help"}).out;
    EXPECT_EQ(help, tool::help_text(*command));
    for (const OptionSection& section : command->sections) {
      for (const Option& o : section.options) {
        ++options;
        const std::string named = std::string("\n  ") + (o.alias ? std::string(o.alias) + ", " : "") + o.name +
                                  (o.value ? std::string(" ") + o.value : "");
        EXPECT_NE(help.find(named), std::string::npos) << command->command << " " << o.name;
        for (const char* spelling : {o.name, o.alias}) {
          if (spelling == nullptr) continue;
          std::vector<std::string> args = {command->command};
          if (std::string(command->command) == "diff") args.push_back(box.dir() + "/a");
          if (std::string(command->command) != "run") args.push_back(box.dir() + "/nowhere");
          args.push_back(spelling);
          if (o.value) args.push_back(example_value(o.value, box));
          if (std::string(command->command) == "run") args.insert(args.end(), {"--", "/bin/true"});
          RunResult r = run_tool(args);
          EXPECT_EQ(r.err.find("unknown option"), std::string::npos) << command->command << " " << spelling << ": "
                                                                     << r.err;
          EXPECT_EQ(r.err.find("needs a value"), std::string::npos) << command->command << " " << spelling << ": "
                                                                    << r.err;
        }
      }
    }
  }
  EXPECT_EQ(options, 51u);  // --max-graph-memory and --max-category in check's and run's tables; export's --max-events; top's six; run's --live
}

}  // namespace
}  // namespace gmp::test
