#include "flame.h"

#include <algorithm>

#include "call_sites.h"

namespace gmp::analysis {
namespace {

void sort_children(FlameNode& n) {
  std::sort(n.children.begin(), n.children.end(),
            [](const FlameNode& a, const FlameNode& b) { return a.name < b.name; });
  for (FlameNode& c : n.children) sort_children(c);
}

std::string folded_name(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (c == ';') c = ':';
    else if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

void fold(const FlameNode& n, std::string& path, std::string& out) {
  const size_t len = path.size();
  if (!path.empty()) path += ';';
  path += folded_name(n.name);
  uint64_t below = 0;
  for (const FlameNode& c : n.children) below += c.value;
  if (n.value > below) {
    out += path;
    out += ' ';
    out += std::to_string(n.value - below);
    out += '\n';
  }
  for (const FlameNode& c : n.children) fold(c, path, out);
  path.resize(len);
}

}  // namespace

FlameNode* FlameNode::child(const std::string& child_name, bool is_python) {
  // A linear search: fan-out is small at every level but the innermost few.
  for (FlameNode& c : children) {
    if (c.name == child_name) return &c;
  }
  children.push_back(FlameNode{child_name, 0, {}, is_python});
  return &children.back();
}

FlameNode build_flame(const std::string& root, const std::unordered_map<uint32_t, Bytes>& by_stack,
                      const StackTable& stacks) {
  FlameNode top{root, 0, {}};
  for (const auto& [id, b] : by_stack) {
    if (b.bytes == 0) continue;
    top.value += b.bytes;
    auto it = stacks.find(id);
    if (it == stacks.end() || it->second.empty()) {
      top.child(site_label(id, stacks))->value += b.bytes;
      continue;
    }
    FlameNode* n = &top;
    for (auto f = it->second.rbegin(); f != it->second.rend(); ++f) {  // outermost first
      n = n->child(f->flame_name(), f->python);
      n->value += b.bytes;
    }
  }
  sort_children(top);
  return top;
}

void append_folded(const FlameNode& root, std::string& out) {
  std::string path;
  fold(root, path, out);
}

}  // namespace gmp::analysis
