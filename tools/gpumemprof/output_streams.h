// The command's stdout and stderr, routed once by main.cpp before any command runs:
// - every write to stdout is checked (stdio keeps only an error flag, and a large fwrite() that
//   fails leaves nothing for the final fflush() to fail on), so that output that could not be
//   written is a failure, not a silent success;
// - text is shown by the terminal rule (terminal_text.h): all of stderr (messages), and stdout
//   until a command says that what it writes there is data.
#pragma once

namespace gmp::tool {

void route_output_streams();

// From here on stdout carries data (JSON, CSV, HTML, a pickle), written byte for byte: such
// formats escape what they hold themselves, and a binary one must not be altered.
void stdout_carries_data();

// Flushes both streams (and the end of a UTF-8 sequence cut short). The errno of the first write to
// stdout that failed, or 0 when every one succeeded.
int finish_output_streams();

}  // namespace gmp::tool
