#include "unwinder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <type_traits>

namespace gmp::shim {
namespace {

// ---- How to step out of the frame at one address, read from the object's .eh_frame ----

// DWARF register numbers on x86_64.
constexpr int kRbp = 6, kRsp = 7, kReturnAddress = 16;

enum class Step : uint8_t { Beyond, Standard, Last };

// libunwind's fast trace takes exactly these frames (x86_64 Gstash_frame.c): CFA = rsp or rbp
// plus an offset, the return address at CFA-8, rbp and rsp unchanged or saved near the CFA; and
// it stops at a frame whose return address is undefined (a thread's or the program's first).
struct Rule {
  Step step = Step::Beyond;
  bool cfa_rbp = false;
  int32_t cfa_offset = 0;
  int32_t rbp_offset = 0;  // from the CFA, when rbp_saved
  bool rbp_saved = false;
};

// Bounds-checked reads of unwind data: a read past the entry's end fails, and stops, the parse.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }
  const uint8_t* at() const { return p_; }
  bool more() const { return ok_ && p_ < end_; }

  template <typename T>
  T fixed() {
    T v{};
    if (end_ - p_ < static_cast<ptrdiff_t>(sizeof v)) return fail<T>();
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = fixed<uint8_t>();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail<uint64_t>();
  }
  int64_t sleb() {
    int64_t v = 0;
    for (int shift = 0; shift < 64;) {
      const uint8_t b = fixed<uint8_t>();
      v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) == 0) return shift < 64 && (b & 0x40) != 0 ? v | -(int64_t{1} << shift) : v;
    }
    return fail<int64_t>();
  }
  // A DW_EH_PE_* encoded pointer: absolute, pc-relative or relative to `data_base`. The indirect
  // bit only concerns what the value points to, never read here.
  uint64_t encoded(uint8_t enc, uint64_t data_base = 0) {
    const uint64_t field = reinterpret_cast<uintptr_t>(p_);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00: v = fixed<uint64_t>(); break;
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed<uint16_t>(); break;
      case 0x03: v = fixed<uint32_t>(); break;
      case 0x04: v = fixed<uint64_t>(); break;
      case 0x09: v = static_cast<uint64_t>(sleb()); break;
      case 0x0a: v = static_cast<uint64_t>(int64_t{fixed<int16_t>()}); break;
      case 0x0b: v = static_cast<uint64_t>(int64_t{fixed<int32_t>()}); break;
      case 0x0c: v = static_cast<uint64_t>(fixed<int64_t>()); break;
      default: return fail<uint64_t>();
    }
    switch (enc & 0x70) {
      case 0x00: return v;
      case 0x10: return v + field;
      case 0x30: return v + data_base;
      default: return fail<uint64_t>();
    }
  }
  void skip(uint64_t n) {
    if (static_cast<uint64_t>(end_ - p_) < n) return fail<void>();
    p_ += n;
  }
  template <typename T>
  T fail() {
    ok_ = false;
    p_ = end_;
    if constexpr (!std::is_void_v<T>) return T{};
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

struct Cie {
  uint64_t code_align = 0;
  int64_t data_align = 0;
  uint8_t fde_encoding = 0;  // DW_EH_PE_absptr unless 'R' says otherwise
  bool has_augmentation_data = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

// An entry's bounds: its 4-byte length (the 64-bit form never appears in .eh_frame of x86_64
// objects and is left to libunwind), then the entry.
bool entry_bounds(const uint8_t* at, const uint8_t** body, const uint8_t** end) {
  uint32_t length;
  std::memcpy(&length, at, sizeof length);
  if (length == 0 || length == 0xffffffffu) return false;
  *body = at + 4;
  *end = at + 4 + length;
  return true;
}

bool parse_cie(const uint8_t* at, Cie* cie) {
  const uint8_t *body, *end;
  if (!entry_bounds(at, &body, &end)) return false;
  Reader r(body, end);
  if (r.fixed<uint32_t>() != 0) return false;  // a CIE's id
  const uint8_t version = r.fixed<uint8_t>();
  const char* augmentation = reinterpret_cast<const char*>(r.at());
  const size_t aug_length = strnlen(augmentation, static_cast<size_t>(end - r.at()));
  r.skip(aug_length + 1);
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  const uint64_t ra = version == 1 ? r.fixed<uint8_t>() : r.uleb();
  if (!r.ok() || ra != kReturnAddress) return false;
  const uint8_t* instructions = r.at();
  if (aug_length > 0) {
    if (augmentation[0] != 'z') return false;  // "eh" and other pre-'z' forms: libunwind's
    cie->has_augmentation_data = true;
    const uint64_t data_length = r.uleb();
    instructions = r.at() + data_length;
    for (size_t i = 1; i < aug_length && r.ok(); ++i) {
      switch (augmentation[i]) {
        case 'R': cie->fde_encoding = r.fixed<uint8_t>(); break;
        case 'L': r.fixed<uint8_t>(); break;
        case 'P': r.encoded(r.fixed<uint8_t>()); break;
        default: return false;  // 'S' (signal frames) and anything unknown: libunwind's
      }
    }
  }
  cie->instructions = instructions;
  cie->end = end;
  return r.ok() && instructions <= end;
}

// The column rules this walker needs, and the DW_CFA_* program that sets them.
enum class Where : uint8_t { Same, Undefined, CfaOffset, Other };
struct Column {
  Where where = Where::Same;
  int64_t offset = 0;
};
struct CfaRow {
  int cfa_reg = -1;
  int64_t cfa_offset = 0;
  bool cfa_other = false;
  Column rbp, rsp, ra;
};

Column column_of(const CfaRow& row, uint64_t reg) {
  return reg == kRbp ? row.rbp : reg == kRsp ? row.rsp : reg == kReturnAddress ? row.ra : Column{};
}

void set_column(CfaRow& row, uint64_t reg, Column c) {
  Column* to = reg == kRbp ? &row.rbp : reg == kRsp ? &row.rsp : reg == kReturnAddress ? &row.ra : nullptr;
  if (to != nullptr) *to = c;
}

void set_column(CfaRow& row, uint64_t reg, Where where, int64_t offset) { set_column(row, reg, Column{where, offset}); }

// Runs the program from `loc` until the row that covers `target`; false on anything unusable.
bool run_program(const uint8_t* p, const uint8_t* end, const Cie& cie, uint64_t loc, uint64_t target,
                 const CfaRow& initial, CfaRow& row) {
  constexpr int kStates = 16;
  CfaRow saved[kStates];
  int depth = 0;
  Reader r(p, end);
  const auto advance = [&](uint64_t delta) {
    loc += delta * cie.code_align;
    return loc <= target;
  };
  while (r.more()) {
    const uint8_t op = r.fixed<uint8_t>();
    const uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:  // DW_CFA_advance_loc
        if (!advance(low)) return true;
        continue;
      case 2:  // DW_CFA_offset
        set_column(row, low, Where::CfaOffset, static_cast<int64_t>(r.uleb()) * cie.data_align);
        continue;
      case 3:  // DW_CFA_restore
        set_column(row, low, column_of(initial, low));
        continue;
      default: break;
    }
    switch (op) {
      case 0x00:  // nop
        break;
      case 0x01:  // set_loc
        loc = r.encoded(cie.fde_encoding);
        if (loc > target) return true;
        break;
      case 0x02:
        if (!advance(r.fixed<uint8_t>())) return true;
        break;
      case 0x03:
        if (!advance(r.fixed<uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(r.fixed<uint32_t>())) return true;
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = r.uleb();
        set_column(row, reg, Where::CfaOffset, static_cast<int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      case 0x06: {  // restore_extended
        const uint64_t reg = r.uleb();
        set_column(row, reg, column_of(initial, reg));
        break;
      }
      case 0x07:
        set_column(row, r.uleb(), {Where::Undefined, 0});
        break;
      case 0x08:
        set_column(row, r.uleb(), {Where::Same, 0});
        break;
      case 0x09: {  // register: saved in another register
        const uint64_t reg = r.uleb();
        r.uleb();
        set_column(row, reg, {Where::Other, 0});
        break;
      }
      case 0x0a:  // remember_state: the whole row, CFA included, as libgcc and libunwind keep it
        if (depth == kStates) return false;
        saved[depth++] = row;
        break;
      case 0x0b:
        if (depth == 0) return false;
        row = saved[--depth];
        break;
      case 0x0c:
        row.cfa_reg = static_cast<int>(r.uleb());
        row.cfa_offset = static_cast<int64_t>(r.uleb());
        row.cfa_other = false;
        break;
      case 0x0d:
        row.cfa_reg = static_cast<int>(r.uleb());
        break;
      case 0x0e:
        row.cfa_offset = static_cast<int64_t>(r.uleb());
        break;
      case 0x0f:  // def_cfa_expression
        row.cfa_other = true;
        r.skip(r.uleb());
        break;
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const uint64_t reg = r.uleb();
        set_column(row, reg, {Where::Other, 0});
        r.skip(r.uleb());
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = r.uleb();
        set_column(row, reg, Where::CfaOffset, r.sleb() * cie.data_align);
        break;
      }
      case 0x12:
        row.cfa_reg = static_cast<int>(r.uleb());
        row.cfa_offset = r.sleb() * cie.data_align;
        row.cfa_other = false;
        break;
      case 0x13:
        row.cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = r.uleb();
        r.uleb();  // a LEB128 either way; its value does not matter here
        set_column(row, reg, {Where::Other, 0});
        break;
      }
      case 0x2e:  // GNU_args_size: the fast trace ignores it
        r.uleb();
        break;
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = r.uleb();
        set_column(row, reg, Where::CfaOffset, -static_cast<int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      default: return false;
    }
  }
  return r.ok();
}

bool near_cfa(const Column& c) {
  return c.where == Where::Same || c.where == Where::Undefined ||
         (c.where == Where::CfaOffset && c.offset > -(1 << 14) && c.offset < (1 << 14) && c.offset != -1);
}

// The row's rule, under exactly the conditions of libunwind's fast trace.
Rule rule_of(const CfaRow& row) {
  Rule rule;
  if (row.ra.where == Where::Undefined) {
    rule.step = Step::Last;
    return rule;
  }
  const bool cfa_ok = !row.cfa_other && (row.cfa_reg == kRbp || row.cfa_reg == kRsp) &&
                      row.cfa_offset > -(1 << 29) && row.cfa_offset < (1 << 29);
  if (!cfa_ok || row.ra.where != Where::CfaOffset || row.ra.offset != -8 || !near_cfa(row.rbp) || !near_cfa(row.rsp)) {
    return rule;
  }
  rule.step = Step::Standard;
  rule.cfa_rbp = row.cfa_reg == kRbp;
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  rule.rbp_saved = row.rbp.where == Where::CfaOffset;
  rule.rbp_offset = static_cast<int32_t>(row.rbp.offset);
  return rule;
}

// The FDE covering `pc` through the object's .eh_frame_hdr search table (the table every linker
// writes; libunwind reads the same one), then its CIE and both programs.
Rule find_rule(uint64_t pc) {
  dl_find_object object;
  if (_dl_find_object(reinterpret_cast<void*>(pc), &object) != 0 || object.dlfo_eh_frame == nullptr) return {};
  const auto* hdr = static_cast<const uint8_t*>(object.dlfo_eh_frame);
  const uint64_t hdr_base = reinterpret_cast<uintptr_t>(hdr);
  // version 1, eh_frame_ptr encoding, count encoding, table encoding (datarel sdata4, 8-byte rows)
  if (hdr[0] != 1 || hdr[3] != 0x3b) return {};
  Reader h(hdr + 4, hdr + 4 + 16);
  h.encoded(hdr[1], hdr_base);
  const uint64_t count = h.encoded(hdr[2], hdr_base);
  if (!h.ok() || count == 0) return {};
  const uint8_t* table = h.at();
  const auto row_at = [&](uint64_t i, int field) {
    int32_t v;
    std::memcpy(&v, table + i * 8 + field * 4, sizeof v);
    return hdr_base + static_cast<uint64_t>(int64_t{v});
  };
  uint64_t lo = 0, hi = count;  // the last row whose start is <= pc
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (row_at(mid, 0) <= pc ? lo : hi) = mid;
  }
  if (row_at(lo, 0) > pc) return {};
  const auto* fde = reinterpret_cast<const uint8_t*>(row_at(lo, 1));
  const uint8_t *body, *end;
  if (!entry_bounds(fde, &body, &end)) return {};
  Reader r(body, end);
  const uint32_t cie_offset = r.fixed<uint32_t>();
  Cie cie;
  if (cie_offset == 0 || !parse_cie(body - cie_offset, &cie)) return {};
  const uint64_t start = r.encoded(cie.fde_encoding);
  const uint64_t range = r.encoded(cie.fde_encoding & 0x0f);
  if (cie.has_augmentation_data) r.skip(r.uleb());
  if (!r.ok() || pc < start || pc - start >= range) return {};
  CfaRow initial;
  if (!run_program(cie.instructions, cie.end, cie, 0, UINT64_MAX, initial, initial)) return {};
  CfaRow row = initial;
  if (!run_program(r.at(), end, cie, start, pc, initial, row)) return {};
  return rule_of(row);
}

// ---- Per-thread state: the rules learnt, and the last walk ----

std::atomic<uint32_t> g_unloads{0};

struct RuleSlot {
  uint64_t pc;          // 0: empty
  uint32_t generation;  // g_unloads when learnt; another value also reads as empty
  Rule rule;
};

struct ThreadState {
  bool busy;  // a signal handler that allocates while this thread walks gets libunwind instead
  // The last complete walk: where it started, how deep it was asked to go, every stack word it
  // read (address, value) in order, and what it produced.
  uint32_t generation;
  int max, count, reads;
  bool start_rbp_used;  // whether a CFA came from the start rbp (before any reload from the stack)
  uint64_t pc, sp, rbp;
  uint64_t beyond_pc;  // where the last walk gave up, or 0
  uint64_t read_at[2 * kMaxUnwindFrames];
  uint64_t read_value[2 * kMaxUnwindFrames];
  uint64_t frames[kMaxUnwindFrames];
  static constexpr int kRuleBits = 11;  // 48 KiB of rules, touched as learnt
  RuleSlot rules[1 << kRuleBits];
};

// Freed at thread exit; a walk after that (another key's destructor allocating) gets -1.
ThreadState* const kGone = reinterpret_cast<ThreadState*>(alignof(ThreadState));
__attribute__((tls_model("initial-exec"))) thread_local ThreadState* t_state = nullptr;
pthread_key_t g_state_key;
bool g_key_made = false;

void free_state(void* p) {
  munmap(p, sizeof(ThreadState));
  t_state = kGone;
}

void make_key() { g_key_made = pthread_key_create(&g_state_key, &free_state) == 0; }

ThreadState* thread_state() {
  if (t_state != nullptr) return t_state == kGone ? nullptr : t_state;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, &make_key);
  // Anonymous memory, touched only as rules are learnt: no allocator on the allocation path.
  void* p = mmap(nullptr, sizeof(ThreadState), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || !g_key_made || pthread_setspecific(g_state_key, p) != 0) {
    if (p != MAP_FAILED) munmap(p, sizeof(ThreadState));
    t_state = kGone;
    return nullptr;
  }
  t_state = static_cast<ThreadState*>(p);
  t_state->count = -1;
  return t_state;
}

const Rule& rule_for(ThreadState& s, uint64_t pc, uint32_t generation) {
  constexpr size_t kMask = (size_t{1} << ThreadState::kRuleBits) - 1;
  const size_t home = static_cast<size_t>((pc * 0x9E3779B97F4A7C15ull) >> (64 - ThreadState::kRuleBits));
  RuleSlot* target = &s.rules[home];
  for (size_t probe = 0; probe < 8; ++probe) {
    RuleSlot& slot = s.rules[(home + probe) & kMask];
    const bool live = slot.pc != 0 && slot.generation == generation;
    if (live && slot.pc == pc) return slot.rule;
    if (!live) {
      target = &slot;
      break;
    }
  }
  *target = {pc, generation, find_rule(pc)};  // crowded: the home slot gives way
  return target->rule;
}

uint64_t load_word(uint64_t at) {
  uint64_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(at), sizeof v);
  return v;
}

// Whether the last walk applies: same start, same depth asked, and every word it read unchanged.
// Why that is exact, not likely: a walk is a function of its start registers, the rules of the
// addresses it meets, and the stack words it reads. The rules are those of this generation (the
// record is dropped with them when an object is unloaded) and a rule is a function of the
// address and the loaded object's unwind tables alone. The first read's address follows from the
// start registers and the first rule; each later read's address from the registers and rule that
// the earlier reads produced. So when the start is the same and the words at the recorded
// addresses still hold the recorded values, a fresh walk reads those same addresses in the same
// order, gets the same values, meets the same rules, stops at the same point and produces the
// same frames. Whatever else on the stack changed (locals, other frames' data) is never read.
// A value of rbp (the start one, or one reloaded from a frame's save slot) is an input only where
// a CFA is computed from it: in code without frame pointers rbp is an ordinary register (a loop
// counter, a pointer) that frames save and the walk reloads, and a value replaced by the next
// reload before any CFA used it changes nothing the walk does. So such a value is neither
// compared (the start rbp) nor recorded (a reload): a reload is recorded when its value is first
// used, which is still before any read whose address depends on it, so the order argument holds.
bool reusable(const ThreadState& s, uint64_t pc, uint64_t sp, uint64_t rbp, int max, uint32_t generation) {
  if (s.count < 0 || s.generation != generation || s.max != max || s.pc != pc || s.sp != sp ||
      (s.start_rbp_used && s.rbp != rbp)) {
    return false;
  }
  for (int i = 0; i < s.reads; ++i) {
    if (load_word(s.read_at[i]) != s.read_value[i]) return false;
  }
  return true;
}

int walk(ThreadState& s, const uint64_t start_pc, const uint64_t start_sp, const uint64_t start_rbp, int max,
         uint32_t generation) {
  uint64_t pc = start_pc, sp = start_sp, rbp = start_rbp;
  s.count = -1;
  s.beyond_pc = 0;
  s.reads = 0;
  s.start_rbp_used = false;
  bool rbp_reloaded = false, rbp_recorded = false;
  uint64_t rbp_at = 0;  // where the current rbp was reloaded from
  int n = 0;
  const auto record = [&s](uint64_t at, uint64_t v) {
    s.read_at[s.reads] = at;
    s.read_value[s.reads++] = v;
  };
  // The same loop as libunwind's fast trace: look up the frame at pc-1 (inside the call), step.
  while (pc >= 0x4000 && n < max) {
    s.frames[n++] = pc;
    if (n == max) break;
    const Rule& rule = rule_for(s, pc - 1, generation);
    if (rule.step == Step::Last) break;
    if (rule.step == Step::Beyond) {
      s.beyond_pc = pc;
      return -1;
    }
    if (rule.cfa_rbp && !rbp_reloaded) s.start_rbp_used = true;
    if (rule.cfa_rbp && rbp_reloaded && !rbp_recorded) {
      record(rbp_at, rbp);
      rbp_recorded = true;
    }
    const uint64_t cfa = (rule.cfa_rbp ? rbp : sp) + static_cast<int64_t>(rule.cfa_offset);
    pc = load_word(cfa - 8);
    record(cfa - 8, pc);
    if (rule.rbp_saved) {
      rbp_at = cfa + static_cast<int64_t>(rule.rbp_offset);
      rbp = load_word(rbp_at);
      rbp_reloaded = true;
      rbp_recorded = false;
    }
    sp = cfa;
  }
  s.generation = generation;
  s.max = max;
  s.pc = start_pc;
  s.sp = start_sp;
  s.rbp = start_rbp;
  s.count = n;
  return n;
}

}  // namespace

uint64_t unwinder_beyond_pc() {
  const ThreadState* s = thread_state();
  return s != nullptr && s->count < 0 ? s->beyond_pc : 0;
}

void unwinder_objects_unloaded() { g_unloads.fetch_add(1, std::memory_order_acq_rel); }

// A frame pointer of its own (GCC keeps one wherever __builtin_frame_address(0) is used), so the
// caller's rbp and return address sit at known places; the caller's sp is just above them.
__attribute__((noinline)) int unwind_stack(uint64_t* out, int max) {
  const auto* frame = static_cast<const uint64_t*>(__builtin_frame_address(0));
  const uint64_t rbp = frame[0], pc = frame[1], sp = reinterpret_cast<uintptr_t>(frame + 2);
  if (max > kMaxUnwindFrames) max = kMaxUnwindFrames;
  ThreadState* s = thread_state();
  if (s == nullptr || s->busy || max <= 0) return max <= 0 ? 0 : -1;
  s->busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const uint32_t generation = g_unloads.load(std::memory_order_acquire);
  const int n = reusable(*s, pc, sp, rbp, max, generation) ? s->count : walk(*s, pc, sp, rbp, max, generation);
  if (n > 0) std::memcpy(out, s->frames, static_cast<size_t>(n) * sizeof(uint64_t));
  std::atomic_signal_fence(std::memory_order_seq_cst);
  s->busy = false;
  return n;
}

}  // namespace gmp::shim
