// Whether an interned call stack (intern_table.h) ran through a given Python file: how the
// collector's live categories tell a KV cache's tensors (model/tensor_categories.h, kKvCacheFile).
#pragma once

#include <cstdint>
#include <string_view>

namespace gmp {

// True when a Python frame of stack `stack_id` is in a file whose path ends with `file`; false for
// an id that is not a published stack.
bool python_stack_has_file(uint32_t stack_id, std::string_view file);

}  // namespace gmp
