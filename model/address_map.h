// Open-addressing hash map from a 64-bit address or handle to a value: the collector's live
// tables. Unlike std::unordered_map it allocates nothing per insert, which matters at millions of
// events per second on a core the application may share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gmp {

template <typename V>
class AddressMap {
 public:
  AddressMap() { reset(16); }

  V* find(uint64_t key) {
    const size_t i = locate(key);
    return state_[i] == kFull ? &values_[i] : nullptr;
  }
  const V* find(uint64_t key) const { return const_cast<AddressMap*>(this)->find(key); }

  void insert_or_assign(uint64_t key, const V& value) {
    if ((used_ + 1) * 10 > state_.size() * 7) {
      // Past 70% occupancy: double if it is live entries, else just sweep the tombstones out.
      rehash(size_ * 4 >= state_.size() ? state_.size() * 2 : state_.size());
    }
    size_t i = locate(key);
    if (state_[i] != kFull) {
      // Reuse the first tombstone on the probe path, if any.
      const size_t t = first_free(key);
      if (state_[t] == kEmpty) ++used_;
      i = t;
      ++size_;
      state_[i] = kFull;
      keys_[i] = key;
    }
    values_[i] = value;
  }

  // Removes `key`; true (and the value in *out) if it was present.
  bool erase(uint64_t key, V* out = nullptr) {
    const size_t i = locate(key);
    if (state_[i] != kFull) return false;
    if (out != nullptr) *out = values_[i];
    state_[i] = kDeleted;
    --size_;
    return true;
  }

  // Removes every entry for which pred(key, value) is true, passing each to `removed` first.
  template <typename Pred, typename Removed>
  void erase_if(Pred&& pred, Removed&& removed) {
    for (size_t i = 0; i < state_.size(); ++i) {
      if (state_[i] == kFull && pred(keys_[i], values_[i])) {
        removed(values_[i]);
        state_[i] = kDeleted;
        --size_;
      }
    }
  }

  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < state_.size(); ++i) {
      if (state_[i] == kFull) f(keys_[i], values_[i]);
    }
  }

  size_t size() const { return size_; }

 private:
  enum State : uint8_t { kEmpty, kFull, kDeleted };

  size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  // The key's slot if present, else the empty slot that ends its probe sequence.
  size_t locate(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (state_[i] == kEmpty || (state_[i] == kFull && keys_[i] == key)) return i;
    }
  }

  size_t first_free(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (state_[i] != kFull) return i;
    }
  }

  void reset(size_t capacity) {
    keys_.assign(capacity, 0);
    values_.assign(capacity, V{});
    state_.assign(capacity, kEmpty);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = used_ = 0;
  }

  void rehash(size_t capacity) {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<V> values = std::move(values_);
    std::vector<uint8_t> state = std::move(state_);
    reset(capacity);
    for (size_t i = 0; i < state.size(); ++i) {
      if (state[i] == kFull) insert_or_assign(keys[i], values[i]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<V> values_;
  std::vector<uint8_t> state_;
  size_t mask_ = 0, size_ = 0, used_ = 0;  // used_: full + tombstones, which lengthen probes
  unsigned shift_ = 60;
};

}  // namespace gmp
