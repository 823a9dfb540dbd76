#include "python_stack_file.h"

#include <cstring>

#include "intern_table.h"
#include "pyframe_entry.h"
#include "stack_frame.h"

namespace gmp {

bool python_stack_has_file(uint32_t stack_id, std::string_view file) {
  InternEntry stack;
  if (!intern_table().get(stack_id, &stack) || stack.type != InternType::Stack) return false;
  for (size_t i = 0; i < stack.length / sizeof(uint64_t); ++i) {
    uint64_t word = 0;
    std::memcpy(&word, stack.data + i * sizeof word, sizeof word);
    const StackFrame f = StackFrame::from_word(word);
    InternEntry py;
    if (!f.python || !intern_table().get(static_cast<uint32_t>(f.value), &py) || py.type != InternType::PyFrame) continue;
    const auto line = pyframe_from_entry(static_cast<uint32_t>(f.value), py.data, py.length);
    if (line && std::string_view(line->file).ends_with(file)) return true;
  }
  return false;
}

}  // namespace gmp
