// Recycled memory for the simulator's per-message records (the Message and Receive records, made with
// std::allocate_shared and a RecyclingAllocator, and the requests): a run makes a few records per
// message, millions of them, but only as many are alive at once as there are operations in flight, so
// freed blocks are kept on free lists and handed out again instead of going through the general-purpose
// allocator each time (whose small per-thread caches overflow once thousands of ranks free records in
// bursts).
//
// Terms:
//   block   memory for one record; blocks are listed by size, in steps of kStep bytes
//   owner   the object whose lifetime bounds the lists' normal use (the Mailbox). A record may outlive
//           it, held by a request kept past the end of the run, so the lists outlive their owner until
//           the last outstanding block is given back
//
// Single-threaded, like everything in a simulation: blocks are taken and given back on the
// simulation's thread. Under AddressSanitizer a block on a list is poisoned, so that a use after its
// record was freed is still reported.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define BAGUA_NETSIM_RECYCLER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BAGUA_NETSIM_RECYCLER_ASAN 1
#endif
#endif
#if defined(BAGUA_NETSIM_RECYCLER_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace bagua::netsim {

class BlockLists {
 public:
  // Held by its owner through an Owned, which abandons the lists instead of deleting them.
  struct Abandon {
    void operator()(BlockLists* lists) const { lists->abandon(); }
  };
  using Owned = std::unique_ptr<BlockLists, Abandon>;
  static Owned create() { return Owned(new BlockLists()); }
  BlockLists(const BlockLists&) = delete;
  BlockLists& operator=(const BlockLists&) = delete;

  // A block of at least `size` bytes, aligned like ::operator new's. Inlined: `size` is a constant at
  // most calls, which folds the list's choice away.
  [[gnu::always_inline]] void* take(size_t size) {
    ++outstanding_;
    std::vector<void*>& list = list_for(size);
    if (list.empty()) return fresh(size);
    void* p = list.back();
    list.pop_back();
    unpoison(p, block_size(size));
    return p;
  }
  // Returns a block taken with the same `size`.
  [[gnu::always_inline]] void give(void* p, size_t size) {
    poison(p, block_size(size));
    list_for(size).push_back(p);
    if (--outstanding_ == 0 && abandoned_) destroy();
  }
  // The owner is done: the lists go once every block is back (at once if they all are).
  void abandon() {
    abandoned_ = true;
    if (outstanding_ == 0) delete this;
  }

 private:
  static constexpr size_t kStep = 16;
  static constexpr size_t kLists = 128;  // sizes up to kStep * (kLists - 1); larger ones are rare

  BlockLists() = default;
  // take()'s and give()'s rare paths, out of line so that the common ones inline where they are used.
  [[gnu::noinline]] static void* fresh(size_t size) { return ::operator new(block_size(size)); }
  [[gnu::noinline]] void destroy() { delete this; }
  ~BlockLists() {
    for (size_t i = 0; i < kLists; ++i)
      for (void* p : lists_[i]) {
        unpoison(p, i * kStep);
        ::operator delete(p);
      }
    for (const Large& large : large_)
      for (void* p : large.blocks) {
        unpoison(p, large.size);
        ::operator delete(p);
      }
  }
  // What every block listed with `size` holds.
  static size_t block_size(size_t size) {
    const size_t i = (size + kStep - 1) / kStep;
    return i < kLists ? i * kStep : size;
  }
  std::vector<void*>& list_for(size_t size) {
    const size_t i = (size + kStep - 1) / kStep;
    return i < kLists ? lists_[i] : large_list(size);
  }
  [[gnu::noinline]] std::vector<void*>& large_list(size_t size) {
    for (Large& large : large_)
      if (large.size == size) return large.blocks;
    large_.push_back({size, {}});
    return large_.back().blocks;
  }
#if defined(BAGUA_NETSIM_RECYCLER_ASAN)
  static void poison(void* p, size_t n) {
    ASAN_POISON_MEMORY_REGION(p, n);
  }
  static void unpoison(void* p, size_t n) {
    ASAN_UNPOISON_MEMORY_REGION(p, n);
  }
#else
  static void poison(void*, size_t) {}
  static void unpoison(void*, size_t) {}
#endif

  struct Large {
    size_t size;
    std::vector<void*> blocks;
  };
  std::vector<void*> lists_[kLists];  // lists_[i]: blocks of i * kStep bytes
  std::vector<Large> large_;          // by exact size
  size_t outstanding_ = 0;            // blocks taken and not given back
  bool abandoned_ = false;
};

// An allocator drawing from BlockLists, for std::allocate_shared (which keeps a copy in the control
// block it allocates, to give the block back). Alignment: that of ::operator new, enough for any type
// without an extended alignment.
template <class T>
class RecyclingAllocator {
 public:
  using value_type = T;
  explicit RecyclingAllocator(BlockLists& lists) : lists_(&lists) {}
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& other) : lists_(other.lists()) {}  // NOLINT
  T* allocate(size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "over-aligned record");
    return static_cast<T*>(lists_->take(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { lists_->give(p, n * sizeof(T)); }
  BlockLists* lists() const { return lists_; }
  template <class U>
  bool operator==(const RecyclingAllocator<U>& other) const {
    return lists_ == other.lists();
  }

 private:
  BlockLists* lists_;
};

}  // namespace bagua::netsim
