#include "python_stack_file.h"

#include "intern_table.h"
#include "pyframe_entry.h"
#include "stack_frame.h"

namespace gmp {

bool python_stack_has_file(uint32_t stack_id, std::string_view file) {
  InternEntry stack;
  if (!intern_table().get(stack_id, &stack) || stack.type != InternType::Stack) return false;
  for (const StackFrame& f : stack_frames(stack.data, stack.length)) {
    InternEntry py;
    if (!f.python || !intern_table().get(static_cast<uint32_t>(f.value), &py) || py.type != InternType::PyFrame) continue;
    const auto line = pyframe_from_entry(static_cast<uint32_t>(f.value), py.data, py.length);
    if (line && std::string_view(line->file).ends_with(file)) return true;
  }
  return false;
}

}  // namespace gmp
