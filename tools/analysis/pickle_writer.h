// A writer of Python pickles for PyTorch's memory viewer (`gpumemprof export --format memory-viz`,
// docs/exports.md). The viewer (torch/utils/viz/MemoryViz.js, https://pytorch.org/memory_viz) has an
// unpickler of its own that knows protocols 2 to 4 and only a few opcodes, so this writer emits
// only those, and only the ones it needs:
//
//   PROTO 4            0x80 0x04, first
//   STOP               '.', last
//   integers           unsigned only: BININT1 'K' u8 (< 2^8), BININT2 'M' u16 LE (< 2^16), BININT 'J'
//                      i32 LE (< 2^31), else LONG1 0x8a n, then n bytes of two's complement LE, as few
//                      as hold the value with a clear sign bit (9 for 2^63 and above, which the
//                      viewer reads as a BigInt)
//   booleans           NEWTRUE 0x88, NEWFALSE 0x89
//   strings            SHORT_BINUNICODE 0x8c u8 length (< 256 bytes), else BINUNICODE 'X' u32 LE
//                      length, then UTF-8 (bytes that are not UTF-8 become U+FFFD: Python's
//                      unpickler refuses them)
//   list               EMPTY_LIST ']' MARK '(' items APPENDS 'e'; every 1000 items APPENDS MARK again,
//                      as CPython does: the viewer appends a batch as the arguments of one call,
//                      which a JavaScript engine limits
//   dict               EMPTY_DICT '}' MARK '(' key value ... SETITEMS 'u', batched the same way
//   tuple              MARK '(' items TUPLE 't'
//   memo               MEMOIZE 0x94 stores the value on top in the next memo slot (0, 1, 2, ...);
//                      BINGET 'h' u8 (< 256) or LONG_BINGET 'j' u32 LE pushes a stored one again.
//                      Only MEMOIZE stores, so the viewer's slot counter and Python's len(memo) agree.
//
// No FRAME: framing is optional in protocol 4 and both readers accept its absence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gmp::analysis {

class PickleWriter {
 public:
  // Appends to `out`, which the caller may drain (flush and clear) between values.
  explicit PickleWriter(std::string& out) : out_(out) {}

  void begin();  // PROTO 4
  void end();    // STOP; every container must be closed

  void integer(uint64_t v);
  void boolean(bool v);
  void string(std::string_view s);
  // A string written once and fetched from the memo afterwards: keys and names that repeat.
  void memo_string(std::string_view s);

  void begin_list() { open_container(Container::List); }
  void end_list() { close_container(); }
  void begin_dict() { open_container(Container::Dict); }  // then key, value, key, value, ...
  void end_dict() { close_container(); }
  void begin_tuple() { open_container(Container::Tuple); }
  void end_tuple() { close_container(); }

  // Stores the value just written (a finished container, say) in the memo; returns its slot.
  uint32_t memoize();
  void get(uint32_t slot);  // pushes memo slot `slot` again, as one value

 private:
  enum class Container : uint8_t { List, Dict, Tuple };
  struct Open {
    Container kind;
    uint32_t values = 0;  // written since the last MARK
  };
  void open_container(Container kind);
  void close_container();
  void value_done();  // counts a finished value in the innermost container, batching lists and dicts
  void op(uint8_t code) { out_ += static_cast<char>(code); }
  void le(uint64_t v, int bytes);

  std::string& out_;
  std::vector<Open> open_;
  uint32_t memo_size_ = 0;
  std::unordered_map<std::string, uint32_t> strings_;  // memo_string's slots
};

}  // namespace gmp::analysis
