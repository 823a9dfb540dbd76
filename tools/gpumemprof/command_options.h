// The options of each command, one table per command: its parser recognises options through the
// table and its --help is written from it, so the two cannot drift (tool_test.cpp runs every
// option of every table against the command and its help). Only the standard library here, so
// the tests read the same tables.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gmp::tool {

struct Option {
  const char* name;   // "--output"
  const char* alias;  // "-o", or nullptr
  const char* value;  // what the help calls its value ("FILE"), or nullptr for a flag
  const char* help;   // its description; lines after the first start with '\n'
};

// Options under a heading of the help ("options:").
struct OptionSection {
  const char* heading;
  std::vector<Option> options;
};

struct CommandOptions {
  const char* command;   // "report"
  const char* synopsis;  // the top-level help's line: "report DIR [--json]"
  const char* summary;   // and what the command does there
  const char* usage;     // the help's text before the options
  std::vector<OptionSection> sections;
  const char* after;     // the help's text after the options
};

// The memory limits of a CI gate (check_limits.h), taken by check and run alike: run checks them
// once its command ends, and tells them from its own options by this table.
extern const std::vector<Option> kLimitOptions;

extern const CommandOptions kRunOptions, kReportOptions, kOomOptions, kExportOptions, kDiffOptions, kHtmlOptions,
    kCheckOptions, kTopOptions;
// Every command's, in the order the top-level help lists them.
const std::vector<const CommandOptions*>& all_command_options();

// The export formats, as export --help, its messages and the top-level help name them.
inline constexpr const char* kExportFormats = "csv, jsonl, perfetto, telemetry-v2, folded, memory-viz";

// `gpumemprof COMMAND --help`.
std::string help_text(const CommandOptions& command);
// `gpumemprof --help`.
std::string top_level_help();
// "--json, --since, --until, --help": what an unknown option's message says is accepted.
std::string accepted_options(const CommandOptions& command);

// "--name", "--name=value" or the alias at `arg`: whether it is that option.
bool is_option(const char* arg, const char* name);
// The option of `command` that `arg` is, or nullptr.
const Option* find_option(const CommandOptions& command, const char* arg);
// The value of the option at argv[i] ("--name=value", "-o=value", or the next argument, advancing
// i past it); nullopt when it is missing.
std::optional<std::string> option_value(int argc, char** argv, int& i);

}  // namespace gmp::tool
