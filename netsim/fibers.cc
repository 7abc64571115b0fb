#include "netsim/fibers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>
#include <new>
#include <vector>

#include "core/check.h"

#if defined(__SANITIZE_ADDRESS__)
#define BAGUA_NETSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BAGUA_NETSIM_ASAN 1
#endif
#endif

#if defined(BAGUA_NETSIM_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(BAGUA_NETSIM_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace bagua::netsim {

namespace {

#if defined(BAGUA_NETSIM_ASAN)
constexpr bool kAsan = true;
void start_switch(void** fake_stack_save, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
}
void finish_switch(void* fake_stack_save, const void** bottom_old, size_t* size_old) {
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
}
void unpoison(void* p, size_t n) {
  ASAN_UNPOISON_MEMORY_REGION(p, n);
}
#else
constexpr bool kAsan = false;
void start_switch(void**, const void*, size_t) {}
void finish_switch(void*, const void**, size_t*) {}
void unpoison(void*, size_t) {}
#endif

// Every fiber's stack: 1 MiB of address space below a guard page (mmap'ed; the OS commits pages only as
// they are touched, so thousands of mostly idle ranks cost little memory). 1 MiB leaves room for Eigen,
// which puts temporaries of up to 128 KiB on the stack (its EIGEN_STACK_ALLOCATION_LIMIT default);
// AddressSanitizer's redzones make frames several times larger, hence 4 MiB there.
constexpr size_t kStackSize = kAsan ? size_t{4} << 20 : size_t{1} << 20;

// Where fiber `id`'s frames begin below the top of its stack: a different cache line of the top half
// of the page for each fiber (37 is coprime with those 32 lines, so consecutive fibers take all 32 in
// turn). A blocked fiber's frames sit near its stack's top, so in step with every other stack they
// would all fall on the same few lines of their pages, and so compete for the same few sets of every
// cache: a simulation of thousands of ranks would keep evicting its own stacks. The top half only, so
// that the first 2 KiB of frames stay on the top page: resuming a fiber then touches one page of its
// stack, not two (each a TLB entry, and with thousands of fibers a page walk: bench_netsim_speed's
// ring at 2048 ranks touched 1.2 KiB less per rank and ran 7% faster than with all 64 lines).
size_t top_offset(int id) {
  constexpr size_t kLine = 64;
  constexpr size_t kLinesPerPage = 32;
  return static_cast<size_t>(id) * 37 % kLinesPerPage * kLine;
}

// Stacks mapped a slab at a time, each kStackSize of usable space above a guard page (PROT_NONE, so
// that a fiber that overflows its stack faults rather than writes over its neighbour's): one mmap per
// slab and one mprotect per stack, for its guard, when it is first handed out, where Boost.Context's
// protected_fixedsize_stack makes an mmap and an mprotect for each stack, and a munmap when it is
// freed. A 1024-rank ring with overlap runs 2048 fibers: those 6,144 system calls were nearly all of
// its calls' time (strace), now 2,048 mprotects and a few dozen mmaps and munmaps. A slab holds as
// many stacks as have been handed out before it (8 at first, 64 at most), so that a run of a few
// ranks reserves little address space; pages are committed only as frames touch them, as before.
class StackSlabs {
 public:
  StackSlabs() = default;
  StackSlabs(const StackSlabs&) = delete;
  StackSlabs& operator=(const StackSlabs&) = delete;
  ~StackSlabs() {
    for (const Slab& s : slabs_)
      munmap(s.base, s.bytes);
  }
  boost::context::stack_context allocate() {
    if (next_ == end_) map_slab();
    char* const guard = next_;
    next_ += stride();
    if (mprotect(guard, page(), PROT_NONE) != 0) throw std::bad_alloc();
    ++handed_out_;
    boost::context::stack_context sctx;
    sctx.size = kStackSize;
    sctx.sp = guard + page() + kStackSize;
    return sctx;
  }
  // Returns a stack's pages and address space to the OS (a slab's other stacks stay mapped).
  void deallocate(boost::context::stack_context& sctx) noexcept {
    munmap(static_cast<char*>(sctx.sp) - sctx.size - page(), sctx.size + page());
  }

 private:
  struct Slab {
    char* base;
    size_t bytes;
  };
  static size_t page() {
    static const auto size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size;
  }
  static size_t stride() { return page() + kStackSize; }
  void map_slab() {
    const size_t stacks = std::clamp<size_t>(handed_out_, 8, 64);
    const size_t bytes = stacks * stride();
    void* const base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    try {
      slabs_.push_back({static_cast<char*>(base), bytes});
    } catch (...) {
      munmap(base, bytes);
      throw;
    }
    next_ = static_cast<char*>(base);
    end_ = next_ + bytes;
  }
  std::vector<Slab> slabs_;
  char* next_ = nullptr;  // the next stack's guard page in the last slab
  char* end_ = nullptr;
  size_t handed_out_ = 0;
};

// The stacks this thread's simulations have finished with, kept for the next fibers: a sweep runs
// its points one after another on a few threads, and a run of a few ranks would otherwise spend more
// on its stacks (an mprotect for the guard page, its share of a slab's mmap, and a page fault for
// each page its frames touch) than on its messages. A stack comes back as its fiber left it; the
// next fiber takes the one that came back last. When a run ends (its Fibers is destroyed), the
// stacks no fiber of that run gave back, left over from earlier runs, keep their pages above kKeptResident (what a
// rank blocked in a collective touches, and more) and release those below to the OS (madvise), so
// that a stack Eigen took deep costs the pool no memory beyond what the last run's own fibers used.
// (Released at every give instead, a stack cost a system call per rank and run: at 8 ranks a fifth
// of the ring benchmark's time.) Memory only: which stack a fiber gets changes nothing it computes.
class StackPool {
 public:
  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  boost::context::stack_context take() {
    if (!used_.empty()) {
      const boost::context::stack_context sctx = used_.back().sctx;
      used_.pop_back();
      return sctx;
    }
    if (released_.empty()) return inner_.allocate();
    const boost::context::stack_context sctx = released_.back();
    released_.pop_back();
    return sctx;
  }
  void give(boost::context::stack_context& sctx) noexcept {
    // Sanitizer poison left by the frames would haunt the stack's next fiber.
    unpoison(static_cast<char*>(sctx.sp) - sctx.size, sctx.size);
    try {
      used_.push_back({sctx, run_});
    } catch (...) {  // no memory for the list: unmap the stack instead
      inner_.deallocate(sctx);
    }
  }
  // A run begins: the stacks given back from now on are its own.
  uint64_t begin_run() { return ++run_; }
  // Run `run` (begin_run's) has ended: every stack given back before it began is released below
  // kKeptResident.
  void end_run(uint64_t run) noexcept {
    size_t kept = 0;
    for (const Pooled& p : used_) {
      if (p.run >= run) {
        used_[kept++] = p;
        continue;
      }
      boost::context::stack_context sctx = p.sctx;
      release_below_top(sctx);
      try {
        released_.push_back(sctx);
      } catch (...) {
        inner_.deallocate(sctx);
      }
    }
    used_.resize(kept);
  }
  size_t size() const { return used_.size() + released_.size(); }
  // The bytes of the pooled stacks that are resident (mincore), for the tests.
  size_t resident_bytes() const {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bytes = 0;
    std::vector<unsigned char> pages;
    const auto count = [&](const boost::context::stack_context& sctx) {
      char* const bottom = static_cast<char*>(sctx.sp) - sctx.size;
      pages.resize((sctx.size + page - 1) / page);
      if (mincore(bottom, sctx.size, pages.data()) != 0) return;
      for (const unsigned char in_core : pages)
        bytes += (in_core & 1) != 0 ? page : 0;
    };
    for (const Pooled& p : used_)
      count(p.sctx);
    for (const boost::context::stack_context& sctx : released_)
      count(sctx);
    return bytes;
  }
  static StackPool& of_this_thread() {
    thread_local StackPool pool;
    return pool;
  }

 private:
  static constexpr size_t kKeptResident = size_t{64} << 10;
  struct Pooled {
    boost::context::stack_context sctx;
    uint64_t run;  // the run that gave it back
  };
  static void release_below_top(const boost::context::stack_context& sctx) noexcept {
    char* const bottom = static_cast<char*>(sctx.sp) - sctx.size;
    const size_t kept = std::min(kKeptResident, sctx.size);
    if (sctx.size > kept) madvise(bottom, sctx.size - kept, MADV_DONTNEED);
  }
  StackSlabs inner_;  // unmaps its slabs when the pool dies, the pooled stacks with them
  std::vector<Pooled> used_;                             // as the last fibers left them, oldest first
  std::vector<boost::context::stack_context> released_;  // released below kKeptResident
  uint64_t run_ = 0;
};

// The allocator Boost.Context keeps in the fiber's record: the stack goes back to this thread's pool
// (fibers are created, run and finished on their engine's thread).
class StackAllocator {
 public:
  boost::context::stack_context allocate() { return StackPool::of_this_thread().take(); }
  void deallocate(boost::context::stack_context& sctx) noexcept {
    StackPool::of_this_thread().give(sctx);
  }
};

}  // namespace

std::string describe(const WaitReason& r) {
  const std::string in = r.subgroup ? " in a subgroup" : "";
  switch (r.kind) {
    case WaitKind::kReceive:
      return "a receive from rank " + std::to_string(r.peer) + " tag " + std::to_string(r.tag) + in;
    case WaitKind::kSend:
      return "a send to rank " + std::to_string(r.peer) + " tag " + std::to_string(r.tag) + in;
    case WaitKind::kEvent:
      return "an event";
    case WaitKind::kStreamSync:
      return "stream '" + (r.stream ? *r.stream : std::string()) + "' to finish";
    case WaitKind::kStreamDrain:
      return "stream '" + (r.stream ? *r.stream : std::string()) + "' to drain before it is destroyed";
    case WaitKind::kStreamIdle:
      return "work (an idle stream)";
    case WaitKind::kTimer:
      return "a timer";
    case WaitKind::kMeeting:
      return "the rest of its group at the start of a collective, tag " + std::to_string(r.tag) + in;
  }
  return "something";
}

size_t Fibers::pooled_stacks() {
  return StackPool::of_this_thread().size();
}

size_t Fibers::pooled_resident_bytes() {
  return StackPool::of_this_thread().resident_bytes();
}

Fibers::Fibers(Engine& engine, OnError on_error)
    : engine_(engine), on_error_(std::move(on_error)), run_(StackPool::of_this_thread().begin_run()) {}

Fibers::~Fibers() {
  // Normally every fiber has finished; if not (the run never happened or was cut short), unwind them.
  abort_all();
  // Every fiber's stack is back in the pool (abort_all unwound and finished them all).
  StackPool::of_this_thread().end_run(run_);
#if defined(BAGUA_NETSIM_TSAN)
  for (void* fiber : tsan_fibers_)  // those that never finished (see abort_all)
    if (fiber != nullptr) __tsan_destroy_fiber(fiber);
#endif
}

Fibers::Fiber& Fibers::spawn(int rank, int track, std::function<void()> body) {
  auto owned = std::make_unique<Fiber>();
  Fiber& f = *owned;
  f.id = static_cast<int>(fibers_.size());
  f.rank = rank;
  f.track = track;
  f.body = std::move(body);
  fibers_.push_back(std::move(owned));
  suspended_at_.push_back(nullptr);
  if (!aborting_) {
    f.state = State::kReady;
    engine_.post(Time::zero(), resume_callback(f));
  }
  return f;
}

Fibers::Fiber& Fibers::spawn_child(std::function<void()> body) {
  const Fiber& parent = current();
  const auto reusable = finished_children_.upper_bound(parent.id);
  if (reusable == finished_children_.end() || aborting_) {
    Fiber& f = spawn(parent.rank, parent.track, std::move(body));
    f.child = true;
    return f;
  }
  Fiber& f = *fibers_[static_cast<size_t>(*reusable)];
  finished_children_.erase(reusable);
  f.state = State::kReady;
  f.created = false;
  f.reason = WaitReason{};
  f.rank = parent.rank;
  f.track = parent.track;
  f.stack_bottom = nullptr;
  f.stack_size = 0;
  f.name.clear();
  f.body = std::move(body);
  suspended_at_[static_cast<size_t>(f.id)] = nullptr;
  engine_.post(Time::zero(), resume_callback(f));
  return f;
}

void Fibers::entry(Fiber& f) {
  if (aborting_) return;  // torn down before it ever ran
  try {
    f.body();
  } catch (const FiberAbort&) {
    // unwound on purpose
  } catch (...) {
    on_error_(f, std::current_exception());
  }
  f.body = nullptr;
}

void Fibers::resume_event(void* fibers, uint64_t id) {
  Fibers& self = *static_cast<Fibers*>(fibers);
  Fiber& f = *self.fibers_[static_cast<size_t>(id)];
  if (f.gate.ready != nullptr && !f.gate.ready(f.gate.object, f)) {
    f.state = State::kBlocked;  // on what the gate put it on
    return;
  }
  self.resume(f);
}

void Fibers::resume(Fiber& f) {
  BAGUA_CHECK(current_ == nullptr, "a fiber resumed from inside another fiber");
  BAGUA_CHECK(f.state != State::kDone && f.state != State::kRunning,
              "resume of a finished or running fiber");
#if defined(BAGUA_NETSIM_TSAN)
  // Before the creation too: Boost.Context enters a new fiber's stack once when creating it.
  tsan_engine_ = __tsan_get_current_fiber();
  tsan_fibers_.resize(fibers_.size());
  void*& tsan_fiber = tsan_fibers_[static_cast<size_t>(f.id)];
  if (tsan_fiber == nullptr) tsan_fiber = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(tsan_fiber, 0);
#endif
  void* fake_stack = nullptr;
  if (!f.created) {
    // Boost.Context enters a new fiber once when creating it (and comes straight back), a switch nobody
    // could announce to the sanitizer; so the fiber is created here, inside the announced switch to its
    // stack, on its first run, and always from the engine's stack. (It also allocates stacks lazily.)
    StackAllocator allocator;
    const boost::context::stack_context sctx = allocator.allocate();
    const size_t offset = top_offset(f.id);
    f.stack_bottom = static_cast<char*>(sctx.sp) - sctx.size;
    f.stack_size = sctx.size - offset;
    start_switch(&fake_stack, f.stack_bottom, f.stack_size);
    f.created = true;
    f.context = boost::context::fiber(
        std::allocator_arg,
        boost::context::preallocated(static_cast<char*>(sctx.sp) - offset, f.stack_size, sctx),
        allocator, [this, &f](boost::context::fiber&& from) {
          f.scheduler = std::move(from);
          finish_switch(nullptr, &engine_stack_bottom_, &engine_stack_size_);
          entry(f);
          f.state = State::kDone;
          start_switch(nullptr, engine_stack_bottom_, engine_stack_size_);
          return std::move(f.scheduler);
        });
  } else {
    start_switch(&fake_stack, f.stack_bottom, f.stack_size);
  }
  // Only now the fiber is current: creating it can throw (std::bad_alloc when its stack cannot be
  // mapped), and that must leave the engine with no fiber current, for abort_all to unwind the others.
  f.state = State::kRunning;
  current_ = &f;
  prefetch_next();
  ++switches_;
  f.context = std::move(f.context).resume();
#if defined(BAGUA_NETSIM_TSAN)
  // A finished fiber's last switch (Boost.Context's, when its body returns) is announced only here, so
  // that the frames that return pops come off the fiber's shadow call stack, not the engine's.
  if (f.state == State::kDone) {
    __tsan_switch_to_fiber(tsan_engine_, 0);
    __tsan_destroy_fiber(std::exchange(tsan_fibers_[static_cast<size_t>(f.id)], nullptr));
  }
#endif
  finish_switch(fake_stack, nullptr, nullptr);
  current_ = nullptr;
  if (f.state == State::kDone && f.child && !aborting_) finished_children_.insert(f.id);
}

void Fibers::prefetch_next() const {
  // The earliest wake-up, which runs within this instant, rather than peek()'s exact next event, at
  // a fraction of its cost; the exact next event (a sleep's end, say) when no wake-up is pending.
  Callback next = engine_.peek_wake();
  if (next.fn == nullptr) next = engine_.peek();
  if (next.fn != &Fibers::resume_event || next.object != this) return;
  const auto id = static_cast<size_t>(next.argument);
  __builtin_prefetch(fibers_[id].get());
  const char* const suspended_at = suspended_at_[id];
  if (suspended_at == nullptr) return;
  // The frames of the switch itself lie below suspend()'s, those it returns to above it.
  constexpr ptrdiff_t kBelow = 128, kAbove = 384, kLine = 64;
  for (ptrdiff_t d = -kBelow; d < kAbove; d += kLine)
    __builtin_prefetch(suspended_at + d);
}

void Fibers::suspend(Fiber& f) {
  suspended_at_[static_cast<size_t>(f.id)] = static_cast<const char*>(__builtin_frame_address(0));
  void* fake_stack = nullptr;
  start_switch(&fake_stack, engine_stack_bottom_, engine_stack_size_);
#if defined(BAGUA_NETSIM_TSAN)
  __tsan_switch_to_fiber(tsan_engine_, 0);
#endif
  f.scheduler = std::move(f.scheduler).resume();
  finish_switch(fake_stack, &engine_stack_bottom_, &engine_stack_size_);
  current_ = &f;
  f.state = State::kRunning;
}

void Fibers::sleep(Time d) {
  Fiber& f = current();
  if (aborting_) throw FiberAbort{};
  f.state = State::kSleeping;
  f.reason = WaitReason{WaitKind::kTimer};
  engine_.post(d, resume_callback(f));
  suspend(f);
  if (aborting_) throw FiberAbort{};
}

void Fibers::abort_all() {
  aborting_ = true;
  engine_.clear();
  BAGUA_CHECK(current_ == nullptr, "abort_all from inside a fiber");
  // Fibers spawned while unwinding (they never run their body) are finished in a further round.
  for (size_t begin = 0, end = fibers_.size(); begin < end; begin = end, end = fibers_.size()) {
    for (size_t i = end; i-- > begin;) {
      Fiber& f = *fibers_[i];
      // A fiber that swallows FiberAbort and blocks again is resumed again; one that keeps doing so is
      // left to Boost.Context's forced unwinding when it is destroyed.
      if (!f.created) {  // never ran: nothing to unwind
        f.state = State::kDone;
        f.body = nullptr;
      }
      for (int attempt = 0; f.state != State::kDone && attempt < 100; ++attempt)
        resume(f);
    }
  }
  engine_.clear();
}

}  // namespace bagua::netsim
