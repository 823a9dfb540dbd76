// Process-wide, lock-free, append-only table that turns variable-length records (call stacks,
// range and mark names, Python source locations) into small ids, so events stay 64 bytes.
// Producers intern in the allocating thread; the collector reads entries by id to write
// attribution.jsonl. Capacity is fixed: when it is exhausted, intern() returns 0 ("none").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gmp {

enum class InternType : uint8_t { Stack = 1, Name = 2, PyFrame = 3 };

struct InternEntry {
  InternType type;
  uint32_t length;       // bytes
  const uint8_t* data;
};

class InternTable {
 public:
  static constexpr uint32_t kMaxEntries = 1u << 17;
  static constexpr size_t kSlots = 1u << 18;          // hash slots, twice the entries
  static constexpr size_t kArenaBytes = 64u << 20;   // reserved, touched only as used

  // The id (1..kMaxEntries) of this record, the same for equal records; 0 when the table is full
  // or its memory could not be mapped.
  uint32_t intern(InternType type, const void* data, uint32_t length);
  // The same id, but first `hint` (a thread's last stack, say) is compared with the record: when it
  // is an equal record's id it is the answer, for one comparison instead of hashing and probing.
  uint32_t intern(InternType type, const void* data, uint32_t length, uint32_t hint);
  // False while `id` is unknown or not yet published by its producer.
  bool get(uint32_t id, InternEntry* out) const;
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> hash;
    std::atomic<uint32_t> id;  // 0 while the claiming producer copies; kNoRoom when it failed
  };
  static constexpr uint32_t kNoRoom = UINT32_MAX;

  bool map_memory();
  uint32_t create(InternType type, const void* data, uint32_t length);
  bool equals(uint32_t id, InternType type, const void* data, uint32_t length) const;

  std::atomic<int> mapped_{0};  // 0 not yet, 1 mapping, 2 ready, 3 failed
  Slot* slots_ = nullptr;
  std::atomic<uint64_t>* offsets_ = nullptr;  // by id: arena offset + 1, 0 until published
  uint8_t* arena_ = nullptr;
  std::atomic<uint32_t> next_id_{0};
  std::atomic<uint64_t> arena_used_{0};
  std::atomic<uint64_t> dropped_{0};
};

// The process's table, shared by the shim and the collector.
InternTable& intern_table();

}  // namespace gmp
