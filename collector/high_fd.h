// Where the profiler's long-lived descriptors live (docs/architecture.md, "Staying out of the
// program's way"): out of the range a program takes its own from. Programs get the lowest free
// number from open(), and some dup2() onto small numbers they chose, so ours go high: 900 and up
// where RLIMIT_NOFILE allows, else at the top of the allowed range, so that the program's next
// open() returns the number it would return without us.
#pragma once

namespace gmp {

// Moves `fd` (closing the original) to a high number, close-on-exec; keeps it where it is when no
// high number is free. Returns the descriptor to use.
int move_high(int fd);

}  // namespace gmp
