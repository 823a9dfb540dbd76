// The flame graph (icicle) of a live set: a tree whose root is "GPU N", then each stack's frames
// outermost first, weighted by the bytes live. Shared by `export --format folded`, the "flame"
// key of the analysis JSON and the HTML report. Grows with distinct stacks and their depth.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bytes.h"
#include "symbolizer.h"

namespace gmp::analysis {

struct FlameNode {
  std::string name;
  uint64_t value = 0;  // bytes here and below
  std::vector<FlameNode> children;  // by name once finished
  bool python = false;  // a Python frame (the HTML report colours them apart)
  FlameNode* child(const std::string& name, bool python = false);  // found or added
};

// Stacks without a record get one frame naming why (see site_label).
FlameNode build_flame(const std::string& root, const std::unordered_map<uint32_t, Bytes>& by_stack,
                      const StackTable& stacks);

// Folded stacks, one line per path that holds bytes itself: "GPU 0;main;alloc_a 1048576".
// ';' in a frame name becomes ':' and line breaks become spaces, so every reader splits the same.
void append_folded(const FlameNode& root, std::string& out);

}  // namespace gmp::analysis
