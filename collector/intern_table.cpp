#include "intern_table.h"
#include "seam.h"

#include <sys/mman.h>

#include <cstring>

namespace gmp {
namespace {

struct Header {
  uint32_t length;
  uint8_t type;
};
constexpr size_t kHeader = 8;  // Header, padded so records stay 8-byte aligned

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

uint64_t hash_record(InternType type, const void* data, uint32_t length) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(type) << 56) ^ length;
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix(h ^ w) * 0x9E3779B97F4A7C15ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, length - i);
  h = mix(h ^ tail);
  return h | 1;  // 0 marks an empty slot
}

void* map_anonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

InternTable& intern_table() {
  static InternTable table;  // constant-initialised: no guard, usable from any constructor
  return table;
}

// The seam's interning (seam.h), beside the table so that each compiles to one call into it.
uint32_t intern_stack_frames(const void* frames, uint32_t bytes, uint32_t hint) {
  return intern_table().intern(InternType::Stack, frames, bytes, hint);
}
uint32_t intern_name(const char* name, uint32_t length) {
  return intern_table().intern(InternType::Name, name, length);
}
uint32_t intern_python_frame(const void* record, uint32_t length) {
  return intern_table().intern(InternType::PyFrame, record, length);
}

bool InternTable::map_memory() {
  int state = mapped_.load(std::memory_order_acquire);
  if (state == 2) return true;
  if (state == 0 && mapped_.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
    slots_ = static_cast<Slot*>(map_anonymous(kSlots * sizeof(Slot)));
    offsets_ = static_cast<std::atomic<uint64_t>*>(map_anonymous((kMaxEntries + 1) * sizeof(uint64_t)));
    arena_ = static_cast<uint8_t*>(map_anonymous(kArenaBytes));
    const bool ok = slots_ != nullptr && offsets_ != nullptr && arena_ != nullptr;
    mapped_.store(ok ? 2 : 3, std::memory_order_release);
    return ok;
  }
  while ((state = mapped_.load(std::memory_order_acquire)) == 1) {
  }
  return state == 2;
}

uint32_t InternTable::create(InternType type, const void* data, uint32_t length) {
  const uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t need = (kHeader + length + 7) & ~uint64_t{7};
  if (id > kMaxEntries) return 0;
  const uint64_t offset = arena_used_.fetch_add(need, std::memory_order_relaxed);
  if (offset + need > kArenaBytes) return 0;
  const Header h{length, static_cast<uint8_t>(type)};
  std::memcpy(arena_ + offset, &h, sizeof h);
  std::memcpy(arena_ + offset + kHeader, data, length);
  offsets_[id].store(offset + 1, std::memory_order_release);
  return id;
}

bool InternTable::get(uint32_t id, InternEntry* out) const {
  if (id == 0 || id > kMaxEntries || mapped_.load(std::memory_order_acquire) != 2) return false;
  const uint64_t offset = offsets_[id].load(std::memory_order_acquire);
  if (offset == 0) return false;
  Header h;
  std::memcpy(&h, arena_ + offset - 1, sizeof h);
  *out = {static_cast<InternType>(h.type), h.length, arena_ + offset - 1 + kHeader};
  return true;
}

bool InternTable::equals(uint32_t id, InternType type, const void* data, uint32_t length) const {
  InternEntry e;
  return get(id, &e) && e.type == type && e.length == length && std::memcmp(e.data, data, length) == 0;
}

uint32_t InternTable::intern(InternType type, const void* data, uint32_t length) {
  if (!map_memory()) return 0;
  const uint64_t h = hash_record(type, data, length);
  // Linear probing; a slot is claimed by writing its hash, and its id follows once the record is
  // copied. Equal hashes are compared byte for byte, so a collision costs a probe, not a wrong id.
  for (size_t probe = 0, i = h & (kSlots - 1); probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
    Slot& s = slots_[i];
    uint64_t current = s.hash.load(std::memory_order_acquire);
    if (current == 0) {
      if (s.hash.compare_exchange_strong(current, h, std::memory_order_acq_rel)) {
        const uint32_t id = create(type, data, length);
        s.id.store(id == 0 ? kNoRoom : id, std::memory_order_release);
        if (id == 0) dropped_.fetch_add(1, std::memory_order_relaxed);
        return id;
      }
    }
    if (current != h) continue;
    uint32_t id;
    while ((id = s.id.load(std::memory_order_acquire)) == 0) {
      // The claiming producer is copying a few hundred bytes at most.
    }
    if (id == kNoRoom) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    if (equals(id, type, data, length)) return id;
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// Equal records always get one id (a record is created only by the claimer of the first slot on
// its hash's probe path that is empty), so an equal hint is exactly what intern() would return.
uint32_t InternTable::intern(InternType type, const void* data, uint32_t length, uint32_t hint) {
  if (hint != 0 && equals(hint, type, data, length)) return hint;
  return intern(type, data, length);
}

}  // namespace gmp
