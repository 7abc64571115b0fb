// Buffers: flat, typed spans of elements.
//
// A buffer lives in a *space*: host memory, device memory (a backend's, e.g. CUDA), or *meta* — a size
// and no storage at all, like a PyTorch meta tensor. Every data operation on a meta buffer is a no-op,
// while every cost (bytes on the wire, modelled compute) is still charged, so that the simulator can
// run paper-scale models (VGG16 at 128 ranks = 70 GB of replicas) through the very same algorithm code.
//
// `Buffer` owns its storage (RAII); `BufferView` is a non-owning (pointer, count, dtype, space) window
// onto a buffer or part of one. Element-wise work on views goes through core/ops.h, which dispatches on
// the space, so algorithm code never asks where its data lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/check.h"
#include "core/units.h"

namespace bagua {

enum class DType : uint8_t { kF32, kF64, kF16, kBF16, kU8, kI32, kI64 };
// Bytes per element (inline: every view's byte count and slice asks it).
constexpr size_t size_of(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kU8:
      return 1;
  }
  return 1;
}
std::string to_string(DType t);

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::kF32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::kF64;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kI64;
}

enum class Memory : uint8_t { kHost, kDevice, kMeta };
std::string to_string(Memory m);

enum class ReduceOp : uint8_t { kSum, kMin, kMax };
std::string to_string(ReduceOp op);

class BufferView;
struct DeviceKernels;  // core/device_kernels.h: optional device implementations of compressor kernels

// Where storage lives and how element-wise work is done there. Host and meta spaces are provided by
// core; a device backend (runtime/nccl) provides its own.
class Space {
 public:
  virtual ~Space() = default;
  virtual Memory memory() const = 0;
  virtual std::string name() const = 0;
  virtual void* allocate(size_t bytes) const = 0;
  virtual void deallocate(void* p) const = 0;
  // dst := src (same dtype and count; src may live in another space, e.g. host -> device).
  virtual void copy(const BufferView& dst, const BufferView& src) const = 0;
  // dst := dst (op) src, element-wise; same dtype and count.
  virtual void reduce(const BufferView& dst, const BufferView& src, ReduceOp op) const = 0;
  // x := a * x
  virtual void scale(const BufferView& x, double a) const = 0;
  // y := y + a * x
  virtual void axpy(const BufferView& y, double a, const BufferView& x) const = 0;
  // x := v
  virtual void fill(const BufferView& x, double v) const = 0;
  // Device implementations of compressor kernels, or nullptr when data here is host-addressable.
  virtual const DeviceKernels* kernels() const { return nullptr; }
};

const Space& host_space();
const Space& meta_space();

class BufferView {
 public:
  BufferView() = default;
  BufferView(void* data, size_t count, DType dtype, const Space* space)
      : data_(data), count_(count), dtype_(dtype), space_(space) {}
  template <class T>
  static BufferView of(std::span<T> s) {
    return BufferView(const_cast<std::remove_const_t<T>*>(s.data()), s.size(),
                      dtype_of<std::remove_const_t<T>>(), &host_space());
  }

  size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  Bytes bytes() const { return Bytes(static_cast<int64_t>(count_ * size_of(dtype_))); }
  const Space& space() const { return *space_; }
  Memory memory() const { return space_->memory(); }
  bool is_meta() const { return memory() == Memory::kMeta; }
  bool is_host() const { return memory() == Memory::kHost; }
  void* data() const { return data_; }

  // Elements [offset, offset + count).
  BufferView slice(size_t offset, size_t count) const {
    if (offset > count_ || count > count_ - offset) slice_out_of_range(offset, count);
    void* p = data_ ? static_cast<char*>(data_) + offset * size_of(dtype_) : nullptr;
    return BufferView(p, count, dtype_, space_);
  }
  // The same bytes seen as another dtype (count adjusted; the byte size must divide).
  BufferView reinterpret(DType t) const;

  // Typed host access; checks dtype and that the data is host memory.
  template <class T>
  std::span<T> as() const {
    BAGUA_CHECK(dtype_ == dtype_of<T>(),
                "buffer is " + to_string(dtype_) + ", accessed as another dtype");
    BAGUA_CHECK(memory() == Memory::kHost, "typed access to a " + to_string(memory()) + " buffer");
    return std::span<T>(static_cast<T*>(data_), count_);
  }

 private:
  // slice()'s error (out of line: the check inline, its message not).
  void slice_out_of_range(size_t offset, size_t count) const;
  void* data_ = nullptr;
  size_t count_ = 0;
  DType dtype_ = DType::kF32;
  const Space* space_ = &host_space();
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Space& space, DType dtype, size_t count);
  static Buffer host(DType dtype, size_t count) { return Buffer(host_space(), dtype, count); }
  static Buffer meta(DType dtype, size_t count) { return Buffer(meta_space(), dtype, count); }
  // A buffer in the same space as `like` (meta stays meta, device stays device).
  static Buffer like(const BufferView& like, DType dtype, size_t count) {
    return Buffer(like.space(), dtype, count);
  }

  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  BufferView view() const { return view_; }
  operator BufferView() const { return view_; }  // NOLINT(google-explicit-constructor)
  size_t count() const { return view_.count(); }
  DType dtype() const { return view_.dtype(); }
  Bytes bytes() const { return view_.bytes(); }
  bool is_meta() const { return view_.is_meta(); }
  template <class T>
  std::span<T> as() const {
    return view_.as<T>();
  }

 private:
  struct Release {
    const Space* space;
    void operator()(void* p) const {
      if (p) space->deallocate(p);
    }
  };
  std::unique_ptr<void, Release> storage_{nullptr, Release{&host_space()}};
  BufferView view_;
};

}  // namespace bagua
