// A hash map kept in one array: open addressing with linear probing, deletion by backward shift (no
// tombstones), so a lookup touches one run of neighbouring slots and inserting or erasing allocates
// nothing once the table has grown to its working size. For the message-matching table, where every
// message looks up, inserts and erases its key.
//
// Terms:
//   home    the slot a key hashes to; a key sits at its home or after it, with no empty slot between
//   probe   the walk from a key's home to the key (or to the empty slot that proves it absent)
//
// Besides lookups, inserts and erases it offers only erase_if(), which visits the entries in no
// meaningful order, for dropping entries whose order matters to nothing (no other iteration: the
// table's layout can never leak into the order of anything). References to values stay valid until the
// next insert or erase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace bagua::netsim {

// A 64-bit finalizer (MurmurHash3's fmix64): every input bit affects every output bit, so that keys
// that differ only in high bits do not share their low bits (the table indexes by the low bits).
inline uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

// Key and Value are small and cheap to copy (a key and an index, say): the table moves them around.
template <class Key, class Value, class Hash>
class FlatMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value of `key`, or null.
  Value* find(const Key& key) {
    if (size_ == 0) return nullptr;
    const uint64_t h = hash(key);
    for (size_t i = h & mask(); slots_[i].used; i = next(i))
      if (slots_[i].hash == h && slots_[i].key == key) return &slots_[i].value;
    return nullptr;
  }

  // Adds `key` (absent) with `value`.
  void insert(const Key& key, const Value& value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const uint64_t h = hash(key);
    size_t i = h & mask();
    while (slots_[i].used)
      i = next(i);
    slots_[i] = {key, value, h, true};
    ++size_;
  }

  // Removes every entry for which pred(key, value) holds.
  template <class Pred>
  void erase_if(Pred pred) {
    std::vector<Slot> old = std::move(slots_);
    slots_ = std::vector<Slot>(old.size());
    size_ = 0;
    for (const Slot& s : old)
      if (s.used && !pred(s.key, s.value)) place(s);
  }

  // Removes `key` if present; returns whether it was.
  bool erase(const Key& key) {
    if (size_ == 0) return false;
    const uint64_t h = hash(key);
    size_t i = h & mask();
    for (; slots_[i].used; i = next(i))
      if (slots_[i].hash == h && slots_[i].key == key) break;
    if (!slots_[i].used) return false;
    // Backward shift: move each following key whose home does not lie in (hole, its slot] into the
    // hole, so that no probe crosses an empty slot before reaching its key.
    size_t hole = i;
    for (size_t j = next(i); slots_[j].used; j = next(j)) {
      const size_t h = slots_[j].hash & mask();
      const bool stays = hole < j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (stays) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole].used = false;
    --size_;
    return true;
  }

 private:
  struct Slot {
    Key key{};
    Value value{};
    uint64_t hash = 0;  // of key; its home is hash & mask()
    bool used = false;
  };
  static uint64_t hash(const Key& key) { return mix64(Hash{}(key)); }
  size_t mask() const { return slots_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_ = std::vector<Slot>(old.empty() ? 16 : 2 * old.size());
    size_ = 0;
    for (const Slot& s : old)
      if (s.used) place(s);
  }
  void place(const Slot& s) {
    size_t i = s.hash & mask();
    while (slots_[i].used)
      i = next(i);
    slots_[i] = s;
    ++size_;
  }

  std::vector<Slot> slots_;  // a power of two long (or empty), at most half full
  size_t size_ = 0;
};

}  // namespace bagua::netsim
