// Human-readable figures for the command's output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "run_analysis.h"

namespace gmp::tool {

std::string human_duration_ns(uint64_t ns);  // "1.234 s", "12.5 ms", "512.0 µs" below a millisecond

// Terminal output (docs/report.md, "Width"): laid out for `output_width()` columns, the terminal's
// when stdout is one, else 80; COLUMNS, when set to a number, wins over both.
size_t output_width();
// The columns `s` takes on a terminal: East Asian wide and fullwidth characters 2, combining marks
// and zero-width characters 0, others 1; a byte that is not UTF-8 counts 1.
size_t display_width(std::string_view s);
// `s` padded with spaces to `width` columns (by display width); wider text is unchanged.
std::string pad(std::string_view s, size_t width);
// `s` in at most `width` columns: its middle replaced by "..." when it is wider, so that both the
// start of a name and its end (a file:line) stay.
std::string elide_middle(std::string_view s, size_t width);
// Where a line's text goes on when it is broken: an option's or a list's description, a table
// row's last column (after its last gap of two spaces within the first half of `width`), a usage
// line's arguments (after "gpumemprof COMMAND "), else `hang` columns in from the line's text.
// line[0, head) is kept as is.
struct LineLayout {
  size_t head, indent;
};
LineLayout line_layout(const std::string& line, size_t width, size_t hang);
// Every line of `text` wider than `width` broken at spaces, laid out by line_layout().
std::string fold_lines(const std::string& text, size_t width, size_t hang);

// The rest of a line that starts `used` columns in, its middle elided to fit the output's width (but
// never narrower than 20 columns: less says too little, and the line overflows instead).
std::string fit_rest(const std::string& s, size_t used);
// `text` as lines of at most `width` columns (words longer than that stand alone), the first
// prefixed with `first`, the others with `rest`; each line ends in '\n'. A size's unit stays on
// the line of its number ("1.00 GiB" never breaks).
std::string wrap(const std::string& text, const std::string& first, const std::string& rest, size_t width);
// `text` wrap()ped for output_width() and written to `to`: prose of the text outputs.
void say(const std::string& text, const std::string& first, const std::string& rest, std::FILE* to = stdout);

// A table of the text outputs, on stdout: the first `header_rows` rows are its header, each column
// as wide as its widest cell (by display width), `gap` spaces apart, after `indent` spaces; columns
// in `right` right-aligned. Column `elastic` (a name) is elided in the middle, down to 20 columns,
// where the table would be wider than output_width(); the last column is never padded. A row of one
// cell (in a table of more columns) is a line of its own, not aligned.
struct TableLayout {
  size_t indent = 2;
  size_t gap = 1;  // spaces between columns; 1 where `gap` would make the table wider than the output
  size_t header_rows = 1;
  int elastic = -1;
  std::vector<size_t> right;
};
void print_table(std::vector<std::vector<std::string>> table, const TableLayout& layout);
// A header of two rows from one: each label's last word under the rest ("peak above entry" is
// "peak above" over "entry"), so that the columns can be as narrow as their figures.
std::vector<std::vector<std::string>> two_row_header(const std::vector<std::string>& labels);

// A change in bytes with its sign: "+10.00 MiB", "-512.00 KiB", "0 B".
std::string signed_bytes(int64_t v);

// What a run's out-of-memory counts mean (summary.json's oom, and the OutOfMemoryErrors PyTorch
// raised): "2 allocations refused by the driver for lack of memory", "PyTorch raised 1
// OutOfMemoryError" (when it did), "2 bundles written", "0 episodes recovered by a later allocation
// of the failed size". Empty when there was no out-of-memory failure at all.
std::vector<std::string> oom_count_parts(const Summary& s);

// "WARNING alert", "cuMemAlloc_v2 of 2.00 GiB failed (CUDA_ERROR_OUT_OF_MEMORY)", ...
std::string marker_label(const analysis::Marker& m);

}  // namespace gmp::tool
